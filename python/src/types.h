// Element types and reduction operations: Python names (strings or the DataType/ReduceOp enums)
// to NCCL's enums, with errors that name the argument and the value.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <string>

#include "nccl.h"

namespace braid::python {

namespace py = pybind11;

/// "float32", "bfloat16", ... or a DataType; raises TypeError/ValueError naming `argName`.
ncclDataType_t parseDtype(py::handle value, const char* argName);
/// "sum", "prod", "max", "min", "avg" or a ReduceOp; raises ValueError naming `argName`.
ncclRedOp_t parseOp(py::handle value, const char* argName);

size_t dtypeSize(ncclDataType_t dtype);
const char* dtypeName(ncclDataType_t dtype);

/// The NCCL type of a buffer's elements from its struct-module format string and item size, or
/// false when the format has no NCCL type (int16, bool, complex, big-endian, records, ...).
bool dtypeFromFormat(const std::string& format, size_t itemsize, ncclDataType_t* dtype);

}  // namespace braid::python
