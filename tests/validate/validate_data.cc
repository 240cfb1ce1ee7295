#include "validate_data.h"

#include <algorithm>
#include <cmath>

#include "braid/datatypes.h"
#include "verifiable/element_codec.h"
#include "verifiable/exact_inputs.h"
#include "verifiable/input_words.h"

namespace braid::validate {
namespace {

double roundTo(ncclDataType_t type, double value) {
  return verifiable::roundToType(type, value);
}

bool isSigned(ncclDataType_t type) {
  return braid::dataType(type).isSigned;
}

// kExact: the shared generator's inputs (verifiable/exact_inputs.h), with its scalars 1 and 2.
verifiable::ExactInputs exactInputs(const ValueSpec& spec) {
  return verifiable::ExactInputs(verifiable::InputSpec{
      spec.type, static_cast<verifiable::Reduction>(spec.op), spec.nranks, spec.seed});
}

}  // namespace

Precision precisionOf(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
      return {std::ldexp(1.0, -11), std::ldexp(1.0, -24)};
    case ncclBfloat16:
      return {std::ldexp(1.0, -8), std::ldexp(1.0, -133)};
    case ncclFloat8e4m3:
      return {std::ldexp(1.0, -4), std::ldexp(1.0, -9)};
    case ncclFloat8e5m2:
      return {std::ldexp(1.0, -3), std::ldexp(1.0, -16)};
    case ncclFloat64:
      return {std::ldexp(1.0, -53), std::ldexp(1.0, -1074)};
    default:
      return {std::ldexp(1.0, -24), std::ldexp(1.0, -149)};
  }
}

double gamma(int k, double unit) {
  return k * unit / (1.0 - k * unit);
}

const char* opName(Op op) {
  static const char* const kNames[kNumOps] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return kNames[static_cast<int>(op)];
}

bool isFloatType(ncclDataType_t type) {
  return braid::dataType(type).isFloat;
}

bool isWidenedType(ncclDataType_t type) {
  return type == ncclFloat16 || type == ncclBfloat16 || type == ncclFloat8e4m3 ||
         type == ncclFloat8e5m2;
}

std::size_t typeBytes(ncclDataType_t type) {
  return braid::dataType(type).size;
}

const char* typeName(ncclDataType_t type) {
  return braid::dataType(type).testsName;
}

double premulScalar(const ValueSpec& spec, int rank) {
  // 1, 1.25, 1.5, 1.75 have three significant bits, exact in fp8 too, and make the real
  // products round.
  if (spec.values == Values::kExact) return verifiable::premulScalar(verifiable::InputSpec{}, rank);
  return 1 + 0.25 * (rank % 4);
}

double inputValue(const ValueSpec& spec, int rank, std::size_t index) {
  if (spec.values == Values::kExact) return exactInputs(spec).value(rank, index);
  // Real values: [-1, 1), or for prod a magnitude in [0.5, 2) so that no product leaves the
  // normal range of any type.
  const std::uint64_t h = verifiable::inputWord(spec.seed, rank, index);
  const bool negative = isSigned(spec.type) && (h & 1);
  const double unit = verifiable::unitInterval(h);
  double value = spec.op == Op::kProd ? std::exp2(2 * unit - 1) : unit;
  return roundTo(spec.type, negative ? -value : value);
}

double contribution(const ValueSpec& spec, int rank, std::size_t index) {
  double value = inputValue(spec, rank, index);
  // A float average is NCCL's premul-sum by 1/nranks rounded to the type.
  if (spec.op == Op::kAvg && isFloatType(spec.type))
    return roundTo(spec.type, value * verifiable::averageScalar(spec.type, spec.nranks));
  if (spec.op != Op::kPreMulSum) return value;
  return roundTo(spec.type, value * premulScalar(spec, rank));
}

double allowedDifference(const ValueSpec& spec, std::size_t index) {
  if (spec.values == Values::kExact || !isFloatType(spec.type)) return 0;
  if (spec.op == Op::kMax || spec.op == Op::kMin) return 0;  // no rounding at all
  Precision own = precisionOf(spec.type);
  // MPI reduces fp16/bf16/fp8 as float after widening; float and double in their own type.
  Precision mpi = isWidenedType(spec.type) ? precisionOf(ncclFloat32) : own;
  int steps = spec.nranks - 1;
  double relative = gamma(steps, own.unit) + gamma(steps, mpi.unit);
  double magnitude = spec.op == Op::kProd ? 1.0 : 0.0;
  for (int r = 0; r < spec.nranks; ++r) {
    double v = std::fabs(contribution(spec, r, index));
    magnitude = spec.op == Op::kProd ? magnitude * v : magnitude + v;
  }
  // (A float average sums the premultiplied contributions: the same bound as a sum of them.)
  return relative * magnitude + spec.nranks * (own.tiny + mpi.tiny);
}

}  // namespace braid::validate
