#include "core/host_stream.h"

#include <exception>
#include <memory>
#include <unordered_set>

#include "util/status.h"

namespace braid {
namespace {

std::mutex registryMutex;
std::unordered_set<const void*>& registry() {
  static auto* live = new std::unordered_set<const void*>();  // never destroyed: used at exit
  return *live;
}

}  // namespace

void HostStream::submit(std::vector<std::atomic<int>*> holds, std::function<ncclResult_t()> work) {
  for (std::atomic<int>* h : holds) h->fetch_add(1);
  lane_.submit([this, holds = std::move(holds), work = std::move(work)] {
    ncclResult_t r = ncclSuccess;
    std::string text;
    if (error() == ncclSuccess) {  // a failed stream runs nothing more, as CUDA's do
      clearLastError();
      try {
        r = work();
      } catch (const std::exception& e) {
        r = fail(ncclInternalError, "host stream work threw: %s", e.what());
      }
      if (r != ncclSuccess) text = lastError();
    }
    for (std::atomic<int>* h : holds) h->fetch_sub(1);
    std::lock_guard<std::mutex> lock(mutex_);
    if (r != ncclSuccess && error_ == ncclSuccess) {
      error_ = r;
      errorText_ = text.empty() ? "host stream work failed" : text;
    }
  });
}

ncclResult_t HostStream::error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

ncclResult_t HostStream::query() {
  const size_t pending = lane_.pending();
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != ncclSuccess) {
    setLastError(errorText_);
    return error_;
  }
  return pending == 0 ? ncclSuccess : ncclInProgress;
}

ncclResult_t HostStream::synchronize() {
  lane_.drain();
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != ncclSuccess) setLastError(errorText_);
  return error_;
}

HostStream* hostStreamCreate() {
  auto* s = new HostStream();
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(s);
  return s;
}

HostStream* hostStreamFromHandle(const void* handle) {
  if (!handle) return nullptr;
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry().count(handle) ? static_cast<HostStream*>(const_cast<void*>(handle)) : nullptr;
}

ncclResult_t hostStreamDestroy(HostStream* stream) {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().erase(stream);
  }
  ncclResult_t r = stream->synchronize();
  delete stream;
  return r;
}

}  // namespace braid
