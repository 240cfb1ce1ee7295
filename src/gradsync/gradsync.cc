// braid::GradSync: the public face of the engine. Every call goes through one guard so that no
// exception (an allocation that fails, say) leaves the object; it becomes an error code and text.
#include <new>

#include "braid/gradsync.h"
#include "gradsync/engine.h"

namespace braid {

struct GradSync::State {
  State(ncclComm_t comm, GradSyncOptions options) : engine(comm, options) {}
  gradsync::Engine engine;
};

namespace {

template <typename Fn>
ncclResult_t guarded(gradsync::Engine& engine, const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return engine.failWithException(ncclSystemError, std::string(what) + ": out of memory");
  } catch (const std::exception& e) {
    return engine.failWithException(ncclInternalError, std::string(what) + ": " + e.what());
  }
}

}  // namespace

GradSync::GradSync(ncclComm_t comm, GradSyncOptions options)
    : state_(std::make_unique<State>(comm, options)) {}

GradSync::~GradSync() = default;

ncclResult_t GradSync::addGradient(const TensorRef& gradient, const std::string& name, int* index) {
  auto& e = state_->engine;
  return guarded(e, "addGradient", [&] { return e.addGradient(gradient, name, index); });
}

ncclResult_t GradSync::finalize() {
  auto& e = state_->engine;
  return guarded(e, "finalize", [&] { return e.finalize(); });
}

void* GradSync::gradientData(int index) const {
  return state_->engine.gradientData(index);
}

ncclResult_t GradSync::markReady(int index) {
  auto& e = state_->engine;
  return guarded(e, "markReady", [&] { return e.markReady(index); });
}

ncclResult_t GradSync::finish() {
  auto& e = state_->engine;
  return guarded(e, "finish", [&] { return e.finish(); });
}

void GradSync::setSyncEnabled(bool enabled) {
  state_->engine.setSyncEnabled(enabled);
}
bool GradSync::syncEnabled() const {
  return state_->engine.syncEnabled();
}
void GradSync::setCommHook(CommHook hook) {
  state_->engine.setCommHook(std::move(hook));
}

ncclResult_t GradSync::broadcastParameters(const std::vector<TensorRef>& params, int root) {
  auto& e = state_->engine;
  return guarded(e, "broadcastParameters", [&] { return e.broadcastParameters(params, root); });
}

ncclResult_t GradSync::verifyParametersEqual(const std::vector<TensorRef>& params,
                                             const std::vector<std::string>& names) {
  auto& e = state_->engine;
  return guarded(e, "verifyParametersEqual",
                 [&] { return e.verifyParametersEqual(params, names); });
}

const StepStats& GradSync::lastStep() const {
  return state_->engine.lastStep();
}
std::vector<std::vector<int>> GradSync::bucketLayout() const {
  return state_->engine.bucketLayout();
}
const std::string& GradSync::lastError() const {
  return state_->engine.lastError();
}

}  // namespace braid
