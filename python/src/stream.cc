// Host streams (braidStream_t): in-order queues whose thread runs the collectives queued on them.
#include <cstdint>

#include "braid/braid.h"
#include "errors.h"
#include "module.h"

namespace braid::python {

namespace {

class Stream {
 public:
  Stream() {
    callReleasingGil("braidStreamCreate", [&] { return braidStreamCreate(&stream_); });
  }
  ~Stream() {
    if (stream_) {
      py::gil_scoped_release release;
      braidStreamDestroy(stream_);
    }
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  braidStream_t get() const {
    if (!stream_) throw py::value_error("the stream was destroyed");
    return stream_;
  }
  void synchronize() {
    braidStream_t s = get();
    callReleasingGil("braidStreamSynchronize", [&] { return braidStreamSynchronize(s); });
  }
  /// True when everything queued has run; raises the stream's sticky error.
  bool query() {
    braidStream_t s = get();
    return callReleasingGil("braidStreamQuery", [&] { return braidStreamQuery(s); }) == ncclSuccess;
  }
  void destroy() {
    braidStream_t s = stream_;
    if (!s) return;
    stream_ = nullptr;
    callReleasingGil("braidStreamDestroy", [&] { return braidStreamDestroy(s); });
  }
  std::uintptr_t handle() const { return reinterpret_cast<std::uintptr_t>(get()); }

 private:
  braidStream_t stream_ = nullptr;
};

}  // namespace

void registerStream(py::module_& m) {
  py::class_<Stream>(m, "Stream", "A braidStream_t; see braid.Stream for the documented API.")
      .def(py::init<>())
      .def("synchronize", &Stream::synchronize)
      .def("query", &Stream::query)
      .def("destroy", &Stream::destroy)
      .def_property_readonly("handle", &Stream::handle);
}

}  // namespace braid::python
