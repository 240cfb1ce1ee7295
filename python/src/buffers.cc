#include "buffers.h"

#include "types.h"

namespace braid::python {

namespace {

bool isCContiguous(const py::buffer_info& info) {
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    // A dimension of length 1 (or an empty array) places no constraint on its stride.
    if (info.shape[d] == 0) return true;
    if (info.shape[d] != 1 && info.strides[d] != expected) return false;
    expected *= info.shape[d];
  }
  return true;
}

std::string prefix(const char* op, const char* argName) {
  return std::string(op) + ": " + argName;
}

}  // namespace

BufferView viewBuffer(py::handle obj, const char* op, const char* argName, Access access,
                      std::optional<ncclDataType_t> dtype) {
  if (obj.is_none()) throw py::type_error(prefix(op, argName) + " is None; an array is required");
  if (!PyObject_CheckBuffer(obj.ptr()))
    throw py::type_error(prefix(op, argName) +
                         " must support the buffer protocol (a numpy array), got " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  BufferView view;
  view.info = py::reinterpret_borrow<py::buffer>(obj).request(false);
  const py::buffer_info& info = view.info;
  if (access == Access::kWrite && info.readonly)
    throw py::value_error(prefix(op, argName) + " is read-only; the result is written there");
  if (!isCContiguous(info))
    throw py::value_error(prefix(op, argName) +
                          " must be C-contiguous (use numpy.ascontiguousarray); a strided view "
                          "cannot be handed to the library");
  if (dtype) {
    if (static_cast<size_t>(info.itemsize) != dtypeSize(*dtype))
      throw py::type_error(prefix(op, argName) + " has " + std::to_string(info.itemsize) +
                           "-byte elements but dtype=" + dtypeName(*dtype) + " needs " +
                           std::to_string(dtypeSize(*dtype)));
    view.dtype = *dtype;
  } else if (!dtypeFromFormat(info.format, info.itemsize, &view.dtype)) {
    throw py::type_error(prefix(op, argName) + " has element format '" + info.format + "' (" +
                         std::to_string(info.itemsize) +
                         " bytes), which has no NCCL type; use int8/uint8/int32/uint32/int64/"
                         "uint64/float16/float32/float64, or pass dtype= for bfloat16/fp8 bits");
  }
  view.data = info.ptr;
  view.count = static_cast<size_t>(info.size);
  return view;
}

void requireCount(const BufferView& view, size_t expected, const char* op, const char* argName,
                  const std::string& why) {
  if (view.count != expected)
    throw py::value_error(prefix(op, argName) + " has " + std::to_string(view.count) +
                          " elements, expected " + std::to_string(expected) + " (" + why + ")");
}

void requireSameDtype(const BufferView& a, const char* aName, const BufferView& b,
                      const char* bName, const char* op) {
  if (a.dtype != b.dtype)
    throw py::type_error(std::string(op) + ": " + bName + " holds " + dtypeName(b.dtype) + " but " +
                         aName + " holds " + dtypeName(a.dtype) +
                         "; both must have the same dtype");
}

}  // namespace braid::python
