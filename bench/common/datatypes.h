// The element types and reduction ops of the perf tests, named and ordered as nccl-tests names
// them (-d int8 ... f8e5m2, -o sum ... mulsum), plus host-side codecs for the types C++ has no
// arithmetic for (half, bfloat16, fp8), so that data can be generated and checked exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/datatypes.h"
#include "nccl.h"

namespace braid::bench {

/// A type's entry in the library's dtype table; `testsName` is its -d name.
using TypeInfo = kernels::DataType;

/// All types, in nccl-tests order (index == ncclDataType_t value).
inline constexpr int kNumTypes = ncclNumTypes;
inline constexpr const auto& kTypes = kernels::kDataTypes;

/// The ops in nccl-tests order: sum, prod, max, min, avg, mulsum. Index 5 (mulsum) stands for a
/// per-rank ncclRedOpCreatePreMulSum op; indices 0..4 are the built-in ncclRedOp_t values.
inline constexpr int kNumOps = 6;
inline constexpr int kOpMulSum = 5;
extern const char* const kOpNames[kNumOps];

const TypeInfo& typeInfo(ncclDataType_t type);

/// -d / -o lookups: the index, -1 for "all", -2 for an unknown name.
int typeIndexFromName(const char* name);
int opIndexFromName(const char* name);

using kernels::FloatFormat;

/// Nearest-even encoding of value into the format (values past the largest finite one become
/// infinity, or NaN for formats without infinity).
std::uint32_t encodeFloat(const FloatFormat& format, double value);
/// Exact value of an encoded element.
double decodeFloat(const FloatFormat& format, std::uint32_t bits);

inline constexpr const FloatFormat& kHalfFormat = kernels::dataType(ncclFloat16).format;
inline constexpr const FloatFormat& kBfloat16Format = kernels::dataType(ncclBfloat16).format;
inline constexpr const FloatFormat& kE4m3Format = kernels::dataType(ncclFloat8e4m3).format;
inline constexpr const FloatFormat& kE5m2Format = kernels::dataType(ncclFloat8e5m2).format;

/// Distance between adjacent representable values of a floating type around value (1 for
/// integer types): the tolerance for results that are rounded once (ncclAvg).
double unitInLastPlace(ncclDataType_t type, double value);

/// Writes value (exactly representable, or rounded to nearest-even) as element `index`.
void storeElement(void* base, std::size_t index, ncclDataType_t type, double value);
/// Reads element `index` as a double (exact for every type except 64-bit integers past 2^53).
double loadElement(const void* base, std::size_t index, ncclDataType_t type);

}  // namespace braid::bench
