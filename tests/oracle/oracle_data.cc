#include "oracle/oracle_data.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "verifiable/input_words.h"

namespace braid::oracle {
namespace {

enum Salt : uint64_t { kValue = 1, kScalar = 3, kZero = 4 };

verifiable::Reduction reductionOf(OpKind op) {
  switch (op) {
    case OpKind::kAvg:
      return verifiable::Reduction::kAvg;
    case OpKind::kPreMulSumHost:
    case OpKind::kPreMulSumDevice:
      return verifiable::Reduction::kPreMulSum;
    default:
      return verifiable::Reduction::kSum;
  }
}

// Float sums, averages and premul-sums: the shared integer partitions over the whole exact
// range, scaled by 2^shift per element; scalars 1/2 and 1/4 alternate between ranks (a rank
// using another's scalar is caught, and each product is exact); averages premultiply by 1/n
// rounded to the type, as NCCL, on inputs whose rounded products are those integers.
verifiable::InputSpec sumSpec(const DTypeInfo& t, OpKind op, int nranks, uint64_t seed) {
  verifiable::InputSpec spec;
  spec.type = t.type;
  spec.reduction = reductionOf(op);
  spec.nranks = nranks;
  spec.seed = verifiable::subSeed(seed, kValue);
  spec.maxAmplitude = INT64_MAX;
  spec.minExponent = t.minShift;
  spec.maxExponent = t.maxShift;
  spec.evenScalar = 0.5;
  spec.oddScalar = 0.25;
  return spec;
}

}  // namespace

const char* opKindName(OpKind op) {
  switch (op) {
    case OpKind::kSum:
      return "sum";
    case OpKind::kProd:
      return "prod";
    case OpKind::kMax:
      return "max";
    case OpKind::kMin:
      return "min";
    case OpKind::kAvg:
      return "avg";
    case OpKind::kPreMulSumHost:
      return "premulsum_host";
    case OpKind::kPreMulSumDevice:
      return "premulsum_device";
  }
  return "?";
}

ncclRedOp_t builtinOp(OpKind op) {
  switch (op) {
    case OpKind::kSum:
      return ncclSum;
    case OpKind::kProd:
      return ncclProd;
    case OpKind::kMax:
      return ncclMax;
    case OpKind::kMin:
      return ncclMin;
    case OpKind::kAvg:
      return ncclAvg;
    default:
      throw std::logic_error("oracle: premulsum is not a built-in op");
  }
}

bool isPreMulSum(OpKind op) {
  return op == OpKind::kPreMulSumHost || op == OpKind::kPreMulSumDevice;
}

ElementOracle::ElementOracle(ncclDataType_t dtype, OpKind op, int nranks, uint64_t seed)
    : info_(dtypeInfo(dtype)),
      op_(op),
      nranks_(nranks),
      seed_(seed),
      scalars_(nranks, 0),
      decoys_(nranks, 0),
      sums_(sumSpec(info_, op, nranks, seed)) {
  if (info_.isFloat) {
    if (isPreMulSum(op)) {
      for (int r = 0; r < nranks; r++) {
        scalars_[r] = encodeFloat(info_, sums_.premulScalar(r));
        decoys_[r] = encodeFloat(info_, 2.0);
      }
    }
  } else if (isPreMulSum(op)) {
    for (int r = 0; r < nranks; r++) {
      scalars_[r] = maskBits(info_, random(r, 0, kScalar));
      decoys_[r] = maskBits(info_, scalars_[r] ^ 0x5A);
    }
  }
}

uint64_t ElementOracle::random(int rank, size_t i, uint64_t salt) const {
  return verifiable::inputWord(verifiable::subSeed(seed_, salt), rank, i);
}

void ElementOracle::element(size_t i, uint64_t* inputs, uint64_t* expected) const {
  if (info_.isFloat)
    floatElement(i, inputs, expected);
  else
    integerElement(i, inputs, expected);
}

void ElementOracle::integerElement(size_t i, uint64_t* in, uint64_t* expected) const {
  const DTypeInfo& t = info_;
  for (int r = 0; r < nranks_; r++) {
    uint64_t v = random(r, i, kValue);
    // Products: mostly odd factors, so the wrapped product is not simply zero.
    if (op_ == OpKind::kProd && (v >> 60) != 0) v |= 1;
    in[r] = maskBits(t, v);
  }
  uint64_t acc = in[0];
  switch (op_) {
    case OpKind::kSum:
    case OpKind::kAvg:
      for (int r = 1; r < nranks_; r++) acc += in[r];
      break;
    case OpKind::kProd:
      for (int r = 1; r < nranks_; r++) acc *= in[r];
      break;
    case OpKind::kMax:
    case OpKind::kMin:
      for (int r = 1; r < nranks_; r++) {
        bool greater = t.isSigned ? signedValue(t, in[r]) > signedValue(t, acc) : in[r] > acc;
        bool less = t.isSigned ? signedValue(t, in[r]) < signedValue(t, acc) : in[r] < acc;
        if ((op_ == OpKind::kMax && greater) || (op_ == OpKind::kMin && less)) acc = in[r];
      }
      break;
    case OpKind::kPreMulSumHost:
    case OpKind::kPreMulSumDevice:
      acc = 0;
      for (int r = 0; r < nranks_; r++) acc += maskBits(t, in[r] * scalars_[r]);
      break;
  }
  acc = maskBits(t, acc);
  if (op_ == OpKind::kAvg) {
    if (t.isSigned)
      acc = static_cast<uint64_t>(signedValue(t, acc) / static_cast<int64_t>(nranks_));
    else
      acc = acc / static_cast<uint64_t>(nranks_);
    acc = maskBits(t, acc);
  }
  *expected = acc;
}

uint64_t ElementOracle::randomFloatBits(int rank, size_t i) const {
  const DTypeInfo& t = info_;
  const int width = 8 * static_cast<int>(t.size);
  uint64_t bits = maskBits(t, random(rank, i, kValue));
  if (random(rank, i, kZero) % 16 == 0) bits &= 1ull << (width - 1);  // ±0
  // NaN never goes in (its result is not a number to compare), nor e5m2's infinity, which the
  // format's saturating conversion turns into the largest finite value by design.
  bool e5m2Inf = t.type == ncclFloat8e5m2 && isInfBits(t, bits);
  if (isNaNBits(t, bits) || e5m2Inf) bits &= ~(1ull << (width - 2));
  return bits;
}

void ElementOracle::floatElement(size_t i, uint64_t* in, uint64_t* expected) const {
  const DTypeInfo& t = info_;
  if (op_ == OpKind::kMax || op_ == OpKind::kMin) {
    uint64_t best = randomFloatBits(0, i);
    in[0] = best;
    for (int r = 1; r < nranks_; r++) {
      in[r] = randomFloatBits(r, i);
      double v = decodeFloat(t, in[r]), b = decodeFloat(t, best);
      if (v == b && v == 0) {
        // -0 < +0: max keeps +0 unless both are -0, min keeps -0 if either is.
        bool negative = op_ == OpKind::kMax ? std::signbit(v) && std::signbit(b)
                                            : std::signbit(v) || std::signbit(b);
        best = encodeFloat(t, negative ? -0.0 : 0.0);
      } else if ((op_ == OpKind::kMax && v > b) || (op_ == OpKind::kMin && v < b)) {
        best = in[r];
      }
    }
    *expected = best;
    return;
  }
  if (op_ == OpKind::kProd) {
    static const double kFactors[6] = {-2, -1, -0.5, 0.5, 1, 2};
    double product = 1;
    for (int r = 0; r < nranks_; r++) {
      uint64_t h = random(r, i, kValue);
      double f = (h >> 32) % 32 == 0 ? (h & 1 ? -0.0 : 0.0) : kFactors[h % 6];
      in[r] = encodeFloat(t, f);
      product *= f;
    }
    *expected = encodeFloat(t, product);
    return;
  }
  // Sum-like: the shared generator's exact inputs.
  if (nranks_ > 64) throw std::logic_error("oracle: at most 64 ranks");
  double values[64];
  sums_.values(i, values);
  for (int r = 0; r < nranks_; r++) in[r] = encodeFloat(t, values[r]);
  *expected = encodeFloat(t, sums_.combine(values));
}

}  // namespace braid::oracle
