// The element types and reduction ops of the perf tests, named and ordered as nccl-tests names
// them (-d int8 ... f8e5m2, -o sum ... mulsum). Element codecs: verifiable/element_codec.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/datatypes.h"
#include "nccl.h"

namespace braid::bench {

/// A type's entry in the library's dtype table; `testsName` is its -d name.
using TypeInfo = braid::DataType;

/// All types, in nccl-tests order (index == ncclDataType_t value).
inline constexpr int kNumTypes = ncclNumTypes;
inline constexpr const auto& kTypes = braid::kDataTypes;

/// The ops in nccl-tests order: sum, prod, max, min, avg, mulsum. Index 5 (mulsum) stands for a
/// per-rank ncclRedOpCreatePreMulSum op; indices 0..4 are the built-in ncclRedOp_t values.
inline constexpr int kNumOps = 6;
inline constexpr int kOpMulSum = 5;
extern const char* const kOpNames[kNumOps];

const TypeInfo& typeInfo(ncclDataType_t type);

/// -d / -o lookups: the index, -1 for "all", -2 for an unknown name.
int typeIndexFromName(const char* name);
int opIndexFromName(const char* name);

}  // namespace braid::bench
