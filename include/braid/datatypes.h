// The one table of NCCL's element types: size, the names each audience knows them by, and the
// bit layout of the floating ones. The library (typeSize), GradSync, the Python bindings, the
// benchmarks and the tests all read it, so a type is described once and their answers agree.
#pragma once

#include <array>
#include <cstddef>

#include "nccl.h"

namespace braid {

/// Bit layout of a binary floating-point format (sign, exponentBits, mantissaBits).
struct FloatFormat {
  int exponentBits = 0;
  int mantissaBits = 0;
  int bias = 0;
  /// IEEE-style: the all-ones exponent holds infinity and NaNs. False for e4m3 (OCP "fn": no
  /// infinity, only S.1111.111 is NaN).
  bool hasInfinity = true;
};

struct DataType {
  ncclDataType_t type;
  std::size_t size;       ///< bytes per element
  const char* name;       ///< NCCL's enumerator without "nccl", lower case: "float16", "float8e4m3"
  const char* testsName;  ///< nccl-tests' -d name: "half", "f8e4m3"
  const char* numpyName;  ///< numpy's (ml_dtypes' for fp8) dtype name: "float16", "float8_e4m3"
  bool isFloat;
  bool isSigned;       ///< true for every floating type
  FloatFormat format;  ///< floating types only
};

/// Every ncclDataType_t, indexed by its value.
inline constexpr std::array<DataType, ncclNumTypes> kDataTypes = {{
    {ncclInt8, 1, "int8", "int8", "int8", false, true, {}},
    {ncclUint8, 1, "uint8", "uint8", "uint8", false, false, {}},
    {ncclInt32, 4, "int32", "int32", "int32", false, true, {}},
    {ncclUint32, 4, "uint32", "uint32", "uint32", false, false, {}},
    {ncclInt64, 8, "int64", "int64", "int64", false, true, {}},
    {ncclUint64, 8, "uint64", "uint64", "uint64", false, false, {}},
    {ncclFloat16, 2, "float16", "half", "float16", true, true, {5, 10, 15, true}},
    {ncclFloat32, 4, "float32", "float", "float32", true, true, {8, 23, 127, true}},
    {ncclFloat64, 8, "float64", "double", "float64", true, true, {11, 52, 1023, true}},
    {ncclBfloat16, 2, "bfloat16", "bfloat16", "bfloat16", true, true, {8, 7, 127, true}},
    {ncclFloat8e4m3, 1, "float8e4m3", "f8e4m3", "float8_e4m3", true, true, {4, 3, 7, false}},
    {ncclFloat8e5m2, 1, "float8e5m2", "f8e5m2", "float8_e5m2", true, true, {5, 2, 15, true}},
}};

/// The entry of `type`, or nullptr for a value outside the enum.
constexpr const DataType* findDataType(int type) {
  return type >= 0 && type < ncclNumTypes ? &kDataTypes[static_cast<std::size_t>(type)] : nullptr;
}

/// The entry of a valid `type` (the caller has checked it).
constexpr const DataType& dataType(ncclDataType_t type) {
  return kDataTypes[static_cast<std::size_t>(type)];
}

// The index is the enum value: a reordered or missing row fails here, not at run time.
static_assert([] {
  for (std::size_t i = 0; i < kDataTypes.size(); ++i) {
    if (static_cast<std::size_t>(kDataTypes[i].type) != i) return false;
  }
  return true;
}());

}  // namespace braid
