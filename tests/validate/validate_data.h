// Inputs of the Braid-versus-MPI validation and the bound each compared element must meet.
//
// Every input is a function of (seed, rank, element), so each rank knows every other rank's
// input without communication and can compute, per element, the sum of magnitudes that bounds
// the rounding error of any reduction order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid::validate {

/// The operations compared; kPreMulSum is ncclRedOpCreatePreMulSum with a per-rank scalar.
enum class Op { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };
inline constexpr int kNumOps = 6;
const char* opName(Op op);

/// kExact: the shared generator's integers (verifiable/exact_inputs.h; also for float types),
/// chosen so that every partial result of any order is representable: both libraries must agree
/// to the bit. kReal: real numbers (float types only), compared within a bound derived from the
/// reduction order.
enum class Values { kExact, kReal };

struct ValueSpec {
  ncclDataType_t type;
  Op op;
  Values values;
  int nranks;
  std::uint64_t seed;
};

/// Element `index` of rank's input, already representable in the type.
double inputValue(const ValueSpec& spec, int rank, std::size_t index);
/// The premul-sum scalar of rank (exact in every type).
double premulScalar(const ValueSpec& spec, int rank);
/// What rank contributes to the sum: input, round(input * scalar) for premul-sum, or for a float
/// avg round(input * (type)(1/nranks)) as NCCL computes it.
double contribution(const ValueSpec& spec, int rank, std::size_t index);

bool isFloatType(ncclDataType_t type);
/// fp16, bf16, fp8: no MPI type; MPI reduces them as float after widening.
bool isWidenedType(ncclDataType_t type);
std::size_t typeBytes(ncclDataType_t type);
const char* typeName(ncclDataType_t type);

/// Largest |difference| allowed between Braid's and MPI's element over nranks inputs: 0 where
/// both are exact by construction; otherwise (gamma_{n-1}(u_type) + gamma_{n-1}(u_mpi)) times
/// the sum (or product) of magnitudes, plus the subnormal spacing once per rounding step.
double allowedDifference(const ValueSpec& spec, std::size_t index);

/// Unit roundoff of one rounding to the type's storage, and its smallest subnormal.
struct Precision {
  double unit;
  double tiny;
};
Precision precisionOf(ncclDataType_t type);
/// The classic error factor k*u / (1 - k*u) of k roundings of unit u.
double gamma(int k, double unit);

}  // namespace braid::validate
