// An independent reference for the reduce kernels: element values decoded from first principles,
// rounding by nearest-value search, arithmetic in double (__float128 for fp64) or exact 128-bit
// integers. It shares no code with kernels/ops.h, so the two check each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/reduce.h"

namespace braid::kernels::testing {

inline constexpr int kDtypeCount = 12;

/// Short dtype name for test names ("fp16", "int32", ...).
const char* dtypeName(int dtype);
bool isIntegerDtype(int dtype);
/// fp16, bf16, fp8 e4m3, fp8 e5m2.
bool isNarrowFloatDtype(int dtype);

/// Whether the element bits are a NaN of the float dtype (false for integers).
bool isNan(int dtype, std::uint64_t bits);

/// Exact value of a narrow-float or fp32 element, from its sign, exponent and mantissa fields.
double exactValue(int dtype, std::uint64_t bits);

/// The dtype's encoding nearest to x, ties to the even code. Overflow: fp16/bf16 give inf from
/// max + half an ulp up, fp8 saturates to the largest finite value (also for +-inf); NaN gives
/// a NaN. fp32 returns x's bits.
std::uint64_t nearestEncoding(int dtype, float x);

/// One output element: post(acc OP pre(local)) under the semantics of kernels/ops.h.
/// acc == nullptr: no accumulator.
std::uint64_t referenceElement(const ReduceOp& op, unsigned flags, const std::uint64_t* acc,
                               std::uint64_t local);

/// Results are equal: same bits, or both NaN (NaN payload and sign are not specified).
bool sameResult(int dtype, std::uint64_t expected, std::uint64_t actual);

/// Random elements of a dtype: random bit patterns mixed with moderate values (so sums round
/// and tie) and special values (zeros, infinities, NaN, subnormals, extremes).
std::vector<std::uint64_t> randomElements(int dtype, std::size_t count, std::mt19937_64& rng);

/// Floats that probe a narrow format's rounding: a strided sweep over all float bit patterns,
/// and around every rounding boundary (each midpoint between neighbouring values and one float
/// ulp either side), the overflow thresholds and the subnormal range, with both signs.
std::vector<float> roundingProbes(int dtype);

/// Element bits <-> memory (little-endian, typeSize(dtype) bytes).
std::uint64_t loadElement(int dtype, const void* base, std::size_t index);
void storeElement(int dtype, void* base, std::size_t index, std::uint64_t bits);

}  // namespace braid::kernels::testing
