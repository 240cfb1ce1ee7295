// The communicator object of the extension (braid._braid.Comm): owns an ncclComm_t and destroys
// it when collected. The Pythonic wrapper is braid.Communicator (python/braid/communicator.py).
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>

#include "nccl.h"

namespace braid::python {

namespace py = pybind11;

class Comm {
 public:
  Comm(ncclComm_t handle, bool blocking);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  /// The live handle; raises ValueError after destroy() or abort().
  ncclComm_t get() const;
  bool alive() const { return handle_ != nullptr; }
  bool blocking() const { return blocking_; }
  /// Cached at creation (a non-blocking communicator answers once initialised).
  int rank() const;
  int size() const;

  void destroy();
  void abort();

 private:
  ncclComm_t handle_;
  bool blocking_;
  mutable int rank_ = -1;
  mutable int size_ = -1;
};

/// A stream argument: 0 (or None, mapped by the Python layer) is the NULL stream.
inline cudaStream_t streamArg(std::uintptr_t stream) {
  return reinterpret_cast<cudaStream_t>(stream);
}

void registerCollectives(py::class_<Comm>& cls);
void registerPointerCollectives(py::class_<Comm>& cls);

}  // namespace braid::python
