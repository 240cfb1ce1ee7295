#include "types.h"

#include "braid/datatypes.h"
#include "module.h"

#include <array>
#include <string_view>

namespace braid::python {

namespace {

struct DtypeAlias {
  std::string_view name;
  ncclDataType_t dtype;
};

// Accepted besides each type's numpy name (kernels/datatypes.h), which is the canonical one
// (dtypeName returns it), so that np.dtype(x).name can be passed straight through.
constexpr std::array<DtypeAlias, 5> kDtypeAliases{{
    {"half", ncclFloat16},
    {"float", ncclFloat32},
    {"double", ncclFloat64},
    {"float8_e4m3fn", ncclFloat8e4m3},  // ml_dtypes' name for the same format
    {"int", ncclInt32},
}};

struct OpName {
  std::string_view name;
  ncclRedOp_t op;
};
constexpr std::array<OpName, 5> kOpNames{
    {{"sum", ncclSum}, {"prod", ncclProd}, {"max", ncclMax}, {"min", ncclMin}, {"avg", ncclAvg}}};

std::string dtypeChoices() {
  std::string s;
  for (const braid::DataType& type : braid::kDataTypes)
    s += (s.empty() ? "" : ", ") + std::string(type.numpyName);
  return s;
}

}  // namespace

ncclDataType_t parseDtype(py::handle value, const char* argName) {
  if (py::isinstance<ncclDataType_t>(value)) return value.cast<ncclDataType_t>();
  if (!py::isinstance<py::str>(value))
    throw py::type_error(std::string(argName) +
                         " must be a dtype name (str) or braid.DataType, got " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  const std::string name = value.cast<std::string>();
  for (const braid::DataType& type : braid::kDataTypes)
    if (type.numpyName == name) return type.type;
  for (const auto& entry : kDtypeAliases)
    if (entry.name == name) return entry.dtype;
  throw py::value_error(std::string(argName) + "='" + name +
                        "' is not a type Braid reduces (one of " + dtypeChoices() + ")");
}

ncclRedOp_t parseOp(py::handle value, const char* argName) {
  if (py::isinstance<ncclRedOp_t>(value)) return value.cast<ncclRedOp_t>();
  if (!py::isinstance<py::str>(value))
    throw py::type_error(std::string(argName) +
                         " must be an op name (str) or braid.ReduceOp, got " +
                         std::string(py::str(py::type::of(value).attr("__name__"))));
  const std::string name = value.cast<std::string>();
  for (const auto& entry : kOpNames)
    if (entry.name == name) return entry.op;
  throw py::value_error(std::string(argName) + "='" + name +
                        "' is not a reduction (one of sum, prod, max, min, avg)");
}

size_t dtypeSize(ncclDataType_t dtype) {
  const braid::DataType* type = braid::findDataType(dtype);
  return type ? type->size : 8;
}

const char* dtypeName(ncclDataType_t dtype) {
  const braid::DataType* type = braid::findDataType(dtype);
  return type ? type->numpyName : "unknown";
}

bool dtypeFromFormat(const std::string& format, size_t itemsize, ncclDataType_t* dtype) {
  std::string_view f = format;
  // Native or explicit little-endian byte order (this is a little-endian host); '>' and '!' are
  // big-endian and have no NCCL type.
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<')) f.remove_prefix(1);
  if (f.size() != 1) return false;
  const char c = f[0];
  const bool isSigned = c == 'b' || c == 'h' || c == 'i' || c == 'l' || c == 'q' || c == 'n';
  const bool isUnsigned = c == 'B' || c == 'H' || c == 'I' || c == 'L' || c == 'Q' || c == 'N';
  if (isSigned || isUnsigned) {
    switch (itemsize) {
      case 1:
        *dtype = isSigned ? ncclInt8 : ncclUint8;
        return true;
      case 4:
        *dtype = isSigned ? ncclInt32 : ncclUint32;
        return true;
      case 8:
        *dtype = isSigned ? ncclInt64 : ncclUint64;
        return true;
      default:
        return false;  // int16: NCCL has no 16-bit integer
    }
  }
  if (c == 'e' && itemsize == 2)
    *dtype = ncclFloat16;
  else if (c == 'f' && itemsize == 4)
    *dtype = ncclFloat32;
  else if (c == 'd' && itemsize == 8)
    *dtype = ncclFloat64;
  else
    return false;
  return true;
}

void registerTypes(py::module_& m) {
  py::enum_<ncclDataType_t> dataType(m, "DataType", "NCCL's element types (ncclDataType_t).");
  for (const braid::DataType& type : braid::kDataTypes)
    dataType.value(type.numpyName, type.type);
  py::enum_<ncclRedOp_t>(m, "ReduceOp", "NCCL's reduction operations (ncclRedOp_t).")
      .value("SUM", ncclSum)
      .value("PROD", ncclProd)
      .value("MAX", ncclMax)
      .value("MIN", ncclMin)
      .value("AVG", ncclAvg);
  m.def(
      "dtype_size", [](py::handle d) { return dtypeSize(parseDtype(d, "dtype")); },
      py::arg("dtype"), "Bytes per element of a dtype name or DataType.");
}

}  // namespace braid::python
