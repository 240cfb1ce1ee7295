// Arrays through the buffer protocol (numpy 1 and 2, memoryview, bytearray, ...): the element
// type, count and address of a C-contiguous buffer, checked with errors that name the argument.
// pybind11's numpy.h is not used: its numpy-1 struct layouts do not match numpy 2.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <optional>
#include <string>

#include "nccl.h"

namespace braid::python {

namespace py = pybind11;

/// A checked view of a Python buffer. Holds the buffer (py::buffer_info) until destroyed, which
/// must happen with the GIL held.
struct BufferView {
  void* data = nullptr;
  size_t count = 0;  ///< elements
  ncclDataType_t dtype = ncclFloat32;
  py::buffer_info info;
};

enum class Access { kRead, kWrite };

/// Checks `obj` (argument `argName` of `op`): it supports the buffer protocol, is C-contiguous,
/// writable when `access` is kWrite, and holds elements of an NCCL type. `dtype` overrides the
/// element type (bfloat16 or fp8 held in uint16/uint8 arrays); the item size must then match.
BufferView viewBuffer(py::handle obj, const char* op, const char* argName, Access access,
                      std::optional<ncclDataType_t> dtype);

/// Raises ValueError unless `view` holds exactly `expected` elements; `why` says where the
/// number comes from ("the count of send", "3 ranks x 5 elements").
void requireCount(const BufferView& view, size_t expected, const char* op, const char* argName,
                  const std::string& why);

/// Raises TypeError unless the two buffers hold the same element type.
void requireSameDtype(const BufferView& a, const char* aName, const BufferView& b,
                      const char* bName, const char* op);

}  // namespace braid::python
