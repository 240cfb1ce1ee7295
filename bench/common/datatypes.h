// The element types and reduction ops of the perf tests, named and ordered as nccl-tests names
// them (-d int8 ... f8e5m2, -o sum ... mulsum), plus host-side codecs for the types C++ has no
// arithmetic for (half, bfloat16, fp8), so that data can be generated and checked exactly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid::bench {

struct TypeInfo {
  ncclDataType_t type;
  const char* name;  ///< the -d name (nccl-tests spelling)
  std::size_t size;  ///< bytes per element
  bool isFloat;
  bool isSigned;
};

/// All types, in nccl-tests order (index == ncclDataType_t value).
inline constexpr int kNumTypes = 12;
extern const TypeInfo kTypes[kNumTypes];

/// The ops in nccl-tests order: sum, prod, max, min, avg, mulsum. Index 5 (mulsum) stands for a
/// per-rank ncclRedOpCreatePreMulSum op; indices 0..4 are the built-in ncclRedOp_t values.
inline constexpr int kNumOps = 6;
inline constexpr int kOpMulSum = 5;
extern const char* const kOpNames[kNumOps];

const TypeInfo& typeInfo(ncclDataType_t type);

/// -d / -o lookups: the index, -1 for "all", -2 for an unknown name.
int typeIndexFromName(const char* name);
int opIndexFromName(const char* name);

/// Bit layout of a binary floating-point format, for the generic encoder below.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;
  int bias;
  bool hasInfinity;  ///< false for e4m3 (NVIDIA's "fn" variant: no inf, one NaN pattern)
};

/// Nearest-even encoding of value into the format (values past the largest finite one become
/// infinity, or NaN for formats without infinity).
std::uint32_t encodeFloat(const FloatFormat& format, double value);
/// Exact value of an encoded element.
double decodeFloat(const FloatFormat& format, std::uint32_t bits);

inline constexpr FloatFormat kHalfFormat{5, 10, 15, true};
inline constexpr FloatFormat kBfloat16Format{8, 7, 127, true};
inline constexpr FloatFormat kE4m3Format{4, 3, 7, false};
inline constexpr FloatFormat kE5m2Format{5, 2, 15, true};

/// Distance between adjacent representable values of a floating type around value (1 for
/// integer types): the tolerance for results that are rounded once (ncclAvg).
double unitInLastPlace(ncclDataType_t type, double value);

/// Writes value (exactly representable, or rounded to nearest-even) as element `index`.
void storeElement(void* base, std::size_t index, ncclDataType_t type, double value);
/// Reads element `index` as a double (exact for every type except 64-bit integers past 2^53).
double loadElement(const void* base, std::size_t index, ncclDataType_t type);

}  // namespace braid::bench
