// Inputs whose AllReduce result is known exactly. Every rank can compute every rank's input for
// element i from (seed, rank, i), so each rank derives the expected output on its own.
//
// How exactness is kept (the reduction order differs between Ring and Tree and between chunks):
// - Integers: any values. Sum, prod and premulsum wrap modulo 2^bits, which is associative and
//   commutative, and avg divides the wrapped sum (truncating), as NCCL does.
// - Float sum/avg/premulsum: the shared generator's integer partitions (verifiable/
//   exact_inputs.h), k * 2^j with sum |k| <= 2^exactBits, so every partial sum in any order is
//   representable (no rounding). Avg is NCCL's: each input times (dtype)(1/nranks), rounded to
//   the dtype, then summed; the inputs are chosen so that those rounded products are the
//   integer partitions, and the expected value is their exact sum. Premulsum scalars are 1/2 or
//   1/4 (per rank), so each product is exact too.
// - Float prod: factors from {±1/2, ±1, ±2} and a few ±0: every partial product is a power of
//   two (or a zero whose sign is the xor of the signs) within range.
// - Max/min: arbitrary non-NaN bit patterns (subnormals, ±0, inf where the format has it);
//   the expected value follows IEEE maximumNumber/minimumNumber with -0 < +0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "oracle/dtype_codec.h"
#include "verifiable/exact_inputs.h"

namespace braid::oracle {

enum class OpKind { kSum, kProd, kMax, kMin, kAvg, kPreMulSumHost, kPreMulSumDevice };
constexpr int kNumOpKinds = 7;
const char* opKindName(OpKind op);
/// The built-in ncclRedOp_t for the first five kinds.
ncclRedOp_t builtinOp(OpKind op);
bool isPreMulSum(OpKind op);

class ElementOracle {
 public:
  ElementOracle(ncclDataType_t dtype, OpKind op, int nranks, uint64_t seed);

  /// Every rank's input for element i (bits), and the exact expected output.
  void element(size_t i, uint64_t* inputs, uint64_t* expected) const;

  /// The premulsum scalar of `rank` (bits of the dtype); 0 for other ops.
  uint64_t scalarOf(int rank) const { return scalars_[rank]; }
  /// A different value for the same rank: what the op is created with (device scalar, changed
  /// before the call) or what the variable is changed to afterwards (host scalar, captured).
  uint64_t decoyScalarOf(int rank) const { return decoys_[rank]; }

  const DTypeInfo& info() const { return info_; }

 private:
  uint64_t random(int rank, size_t i, uint64_t salt) const;
  void integerElement(size_t i, uint64_t* in, uint64_t* expected) const;
  void floatElement(size_t i, uint64_t* in, uint64_t* expected) const;
  uint64_t randomFloatBits(int rank, size_t i) const;

  const DTypeInfo& info_;
  OpKind op_;
  int nranks_;
  uint64_t seed_;
  std::vector<uint64_t> scalars_;
  std::vector<uint64_t> decoys_;
  verifiable::ExactInputs sums_;  ///< floats: sum, avg and premul-sum inputs
};

}  // namespace braid::oracle
