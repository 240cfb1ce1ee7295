// Library failures as Python exceptions: a call that returns anything but ncclSuccess (or
// ncclInProgress, which is not a failure) becomes braid.BraidError carrying the ncclResult_t code
// and the calling thread's ncclGetLastError text.
#pragma once

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "nccl.h"

namespace braid::python {

namespace py = pybind11;

/// Thrown by the bindings, translated to braid.BraidError (python/braid/errors.py).
class LibraryError : public std::runtime_error {
 public:
  LibraryError(ncclResult_t code, std::string text)
      : std::runtime_error(text), code_(code), text_(std::move(text)) {}
  ncclResult_t code() const { return code_; }
  const std::string& text() const { return text_; }

 private:
  ncclResult_t code_;
  std::string text_;
};

/// Runs `call` (a library call returning ncclResult_t) without the GIL, so other Python threads
/// (other ranks, a watchdog) run while it blocks, and raises LibraryError on failure. The error
/// text is read on the same thread right after the call: ncclGetLastError is per thread.
template <class Call>
ncclResult_t callReleasingGil(const char* what, Call&& call) {
  ncclResult_t result;
  std::string text;
  {
    py::gil_scoped_release release;
    result = call();
    if (result != ncclSuccess && result != ncclInProgress) text = ncclGetLastError(nullptr);
  }
  if (result != ncclSuccess && result != ncclInProgress) {
    if (text.empty()) text = std::string(what) + ": " + ncclGetErrorString(result);
    throw LibraryError(result, text);
  }
  return result;
}

}  // namespace braid::python
