// braid::GradSync (include/braid/gradsync.h) for Python training loops: gradients registered as
// buffers (numpy arrays, or raw addresses for framework tensors), marked ready as backward
// produces them, and finished before the optimizer step.
#include "braid/gradsync.h"

#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "buffers.h"
#include "communicator.h"
#include "errors.h"
#include "module.h"
#include "types.h"

namespace braid::python {

namespace {

WireFormat parseWire(const std::string& wire) {
  if (wire == "native") return WireFormat::kNative;
  if (wire == "float16") return WireFormat::kFloat16;
  if (wire == "bfloat16") return WireFormat::kBFloat16;
  throw py::value_error("wire='" + wire + "' is not a wire format (native, float16, bfloat16)");
}

Averaging parseAveraging(const std::string& averaging) {
  if (averaging == "avg") return Averaging::kAvgOp;
  if (averaging == "premulsum") return Averaging::kPreMulSum;
  throw py::value_error("averaging='" + averaging + "' is not an averaging (avg, premulsum)");
}

class PyGradSync {
 public:
  PyGradSync(py::object comm, size_t bucketCapBytes, size_t firstBucketCapBytes,
             bool gradientsAsBucketViews, bool rebuildBucketsAfterFirstStep,
             const std::string& wire, const std::string& averaging)
      : comm_(std::move(comm)) {
    GradSyncOptions options;
    options.bucketCapBytes = bucketCapBytes;
    options.firstBucketCapBytes = firstBucketCapBytes;
    options.gradientsAsBucketViews = gradientsAsBucketViews;
    options.rebuildBucketsAfterFirstStep = rebuildBucketsAfterFirstStep;
    options.wire = parseWire(wire);
    options.averaging = parseAveraging(averaging);
    sync_ = std::make_unique<GradSync>(comm_.cast<Comm&>().get(), options);
  }

  int addGradient(py::handle buffer, const std::string& name, py::handle dtype) {
    std::optional<ncclDataType_t> dt;
    if (!dtype.is_none()) dt = parseDtype(dtype, "dtype");
    BufferView view = viewBuffer(buffer, "GradSync.add_gradient", "gradient", Access::kWrite, dt);
    const int index = add(TensorRef{view.data, view.count, view.dtype}, name);
    keepAlive_.push_back(py::reinterpret_borrow<py::object>(buffer));
    return index;
  }

  int addGradientPtr(std::uintptr_t data, long long count, py::handle dtype,
                     const std::string& name) {
    if (count < 0) throw py::value_error("count=" + std::to_string(count) + " is negative");
    return add(TensorRef{reinterpret_cast<void*>(data), static_cast<size_t>(count),
                         parseDtype(dtype, "dtype")},
               name);
  }

  void finalize() {
    check("GradSync.finalize", [&] { return sync_->finalize(); });
  }
  void markReady(int index) {
    check("GradSync.mark_ready", [&] { return sync_->markReady(index); });
  }
  void finish() {
    check("GradSync.finish", [&] { return sync_->finish(); });
  }

  /// The gradient's memory as a writable memoryview (with views, backward must write there).
  py::memoryview gradientView(int index) {
    if (index < 0 || static_cast<size_t>(index) >= gradients_.size())
      throw py::index_error("index=" + std::to_string(index) + " is not a registered gradient");
    void* data = sync_->gradientData(index);
    const TensorRef& g = gradients_[index];
    static char empty = 0;
    return py::memoryview::from_memory(data ? data : &empty,
                                       static_cast<py::ssize_t>(g.count * dtypeSize(g.dtype)));
  }
  std::uintptr_t gradientPtr(int index) const {
    return reinterpret_cast<std::uintptr_t>(sync_->gradientData(index));
  }

  void broadcastParameters(const py::list& params, int root) {
    std::vector<TensorRef> refs;
    std::vector<BufferView> views;
    collect(params, "GradSync.broadcast_parameters", Access::kWrite, &refs, &views);
    check("GradSync.broadcast_parameters", [&] { return sync_->broadcastParameters(refs, root); });
  }

  void verifyParametersEqual(const py::list& params, const std::vector<std::string>& names) {
    std::vector<TensorRef> refs;
    std::vector<BufferView> views;
    collect(params, "GradSync.verify_parameters_equal", Access::kRead, &refs, &views);
    check("GradSync.verify_parameters_equal",
          [&] { return sync_->verifyParametersEqual(refs, names); });
  }

  py::dict lastStep() const {
    const StepStats& s = sync_->lastStep();
    py::dict d;
    d["bytes_reduced"] = s.bytesReduced;
    d["wire_bytes"] = s.wireBytes;
    d["buckets"] = s.buckets;
    d["finish_wait_seconds"] = s.finishWaitSeconds;
    d["synced"] = s.synced;
    return d;
  }

  GradSync& sync() { return *sync_; }

 private:
  int add(const TensorRef& ref, const std::string& name) {
    int index = -1;
    check("GradSync.add_gradient", [&] { return sync_->addGradient(ref, name, &index); });
    gradients_.push_back(ref);
    return index;
  }

  void collect(const py::list& params, const char* op, Access access, std::vector<TensorRef>* refs,
               std::vector<BufferView>* views) {
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string arg = "params[" + std::to_string(i) + "]";
      views->push_back(viewBuffer(params[i], op, arg.c_str(), access, std::nullopt));
      refs->push_back(TensorRef{views->back().data, views->back().count, views->back().dtype});
    }
  }

  template <class Call>
  void check(const char* what, Call&& call) {
    ncclResult_t result;
    std::string text;
    {
      py::gil_scoped_release release;
      result = call();
      if (result != ncclSuccess) text = sync_->lastError();
    }
    if (result != ncclSuccess) {
      if (text.empty()) text = std::string(what) + ": " + ncclGetErrorString(result);
      throw LibraryError(result, text);
    }
  }

  py::object comm_;  // keeps the communicator alive as long as this object
  std::unique_ptr<GradSync> sync_;
  std::vector<TensorRef> gradients_;
  std::vector<py::object> keepAlive_;  // registered gradient arrays
};

}  // namespace

void registerGradSync(py::module_& m) {
  py::class_<PyGradSync>(m, "GradSync", "braid::GradSync; see braid.GradSync.")
      .def(py::init<py::object, size_t, size_t, bool, bool, const std::string&,
                    const std::string&>(),
           py::arg("comm"), py::arg("bucket_cap_bytes"), py::arg("first_bucket_cap_bytes"),
           py::arg("gradients_as_bucket_views"), py::arg("rebuild_buckets_after_first_step"),
           py::arg("wire"), py::arg("averaging"))
      .def("add_gradient", &PyGradSync::addGradient, py::arg("gradient"), py::arg("name"),
           py::arg("dtype") = py::none())
      .def("add_gradient_ptr", &PyGradSync::addGradientPtr, py::arg("ptr"), py::arg("count"),
           py::arg("dtype"), py::arg("name"))
      .def("finalize", &PyGradSync::finalize)
      .def("mark_ready", &PyGradSync::markReady, py::arg("index"))
      .def("finish", &PyGradSync::finish)
      .def("gradient_view", &PyGradSync::gradientView, py::arg("index"))
      .def("gradient_ptr", &PyGradSync::gradientPtr, py::arg("index"))
      .def("broadcast_parameters", &PyGradSync::broadcastParameters, py::arg("params"),
           py::arg("root") = 0)
      .def("verify_parameters_equal", &PyGradSync::verifyParametersEqual, py::arg("params"),
           py::arg("names") = std::vector<std::string>{})
      .def_property(
          "sync_enabled", [](PyGradSync& g) { return g.sync().syncEnabled(); },
          [](PyGradSync& g, bool enabled) { g.sync().setSyncEnabled(enabled); })
      .def_property_readonly("last_step", &PyGradSync::lastStep)
      .def_property_readonly("bucket_layout", [](PyGradSync& g) { return g.sync().bucketLayout(); })
      .def_property_readonly("last_error", [](PyGradSync& g) { return g.sync().lastError(); });
}

}  // namespace braid::python
