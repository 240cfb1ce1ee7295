#include "verifiable/exact_inputs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include "braid/datatypes.h"
#include "verifiable/element_codec.h"
#include "verifiable/input_words.h"

namespace braid::verifiable {
namespace {

// Exactness limits of a type: every integer in [-sumBound, sumBound] is representable (and no
// integer result can reach the poison value of the benchmarks), and 2^maxDoublings is
// representable.
struct Limits {
  std::int64_t sumBound;
  int maxDoublings;
};

Limits limitsOf(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return {126, 6};
    case ncclUint8:
      return {254, 7};
    case ncclInt32:
      return {std::int64_t{1} << 30, 30};
    case ncclUint32:
      return {std::int64_t{1} << 31, 31};
    case ncclInt64:
      return {std::int64_t{1} << 40, 62};
    case ncclUint64:
      return {std::int64_t{1} << 40, 63};
    case ncclFloat16:
      return {2048, 15};
    case ncclFloat32:
      return {std::int64_t{1} << 24, 60};
    case ncclFloat64:
      return {std::int64_t{1} << 53, 60};
    case ncclBfloat16:
      return {256, 60};
    case ncclFloat8e4m3:
      return {16, 8};
    case ncclFloat8e5m2:
      return {8, 15};
    default:
      return {1, 0};
  }
}

constexpr std::uint64_t kExponentStream = 1;

}  // namespace

double averageScalar(ncclDataType_t type, int nranks) {
  const double inverse = 1.0 / nranks;
  if (type == ncclFloat64) return inverse;
  return roundToType(type, static_cast<float>(inverse));
}

ExactInputs::ExactInputs(const InputSpec& spec)
    : spec_(spec),
      isSigned_(braid::dataType(spec.type).isSigned),
      premulAverage_(spec.reduction == Reduction::kAvg && braid::dataType(spec.type).isFloat),
      averageScalar_(premulAverage_ ? averageScalar(spec.type, spec.nranks) : 1),
      fixedScale_(std::ldexp(1.0, spec.minExponent)),
      exponentKey_(rankKey(subSeed(spec.seed, kExponentStream), -1)) {
  Limits limits = limitsOf(spec.type);
  std::int64_t n = spec.nranks;
  switch (spec.reduction) {
    case Reduction::kProd:
      shape_ = Shape::kProduct;
      // At most maxDoublings ranks contribute a factor 2 to any element.
      stride_ = std::max<std::int64_t>(
          1, (n + limits.maxDoublings - 1) / std::max(1, limits.maxDoublings));
      break;
    case Reduction::kMax:
    case Reduction::kMin:
      shape_ = Shape::kMinMax;
      amplitude_ = std::min(limits.sumBound, spec.maxAmplitude);
      break;
    default: {  // sum, avg, premul-sum: |partial sums| <= sumBound in any order
      shape_ = Shape::kSumLike;
      // In units of the smaller scalar, a rank's term weighs up to larger / smaller.
      double ratio = 1;
      if (spec.reduction == Reduction::kPreMulSum) {
        double a = std::fabs(spec.evenScalar), b = std::fabs(spec.oddScalar);
        ratio = std::max(a, b) / std::min(a, b);
      }
      std::int64_t weight = n * static_cast<std::int64_t>(std::ceil(ratio));
      if (weight <= limits.sumBound) {
        amplitude_ = std::min(limits.sumBound / weight, spec.maxAmplitude);
      } else {
        // More ranks than the type can sum exactly: only some ranks contribute (+-1) to each
        // element, at most sumBound / ratio of them.
        amplitude_ = 1;
        stride_ = (weight + limits.sumBound - 1) / limits.sumBound;
      }
    }
  }
  rankKeys_.resize(static_cast<std::size_t>(spec.nranks));
  for (int r = 0; r < spec.nranks; ++r) rankKeys_[r] = rankKey(spec.seed, r);
}

bool ExactInputs::contributes(int rank, std::size_t index) const {
  return stride_ == 1 || (index + static_cast<std::size_t>(rank)) % stride_ == 0;
}

std::int64_t ExactInputs::part(int rank, std::size_t index) const {
  std::uint64_t h = streamWord(rankKeys_[rank], index);
  switch (shape_) {
    case Shape::kProduct: {
      std::int64_t factor = (contributes(rank, index) && (h & 1)) ? 2 : 1;
      return (isSigned_ && (h & 2)) ? -factor : factor;
    }
    case Shape::kMinMax:
      return uniformInteger(h, amplitude_, isSigned_);
    case Shape::kSumLike:
    default:
      return contributes(rank, index) ? uniformInteger(h, amplitude_, isSigned_) : 0;
  }
}

double ExactInputs::scale(std::size_t index) const {
  if (shape_ == Shape::kProduct || spec_.minExponent == spec_.maxExponent) {
    return shape_ == Shape::kProduct ? 1.0 : fixedScale_;
  }
  const auto span = static_cast<std::uint64_t>(spec_.maxExponent - spec_.minExponent + 1);
  return std::ldexp(1.0,
                    spec_.minExponent + static_cast<int>(streamWord(exponentKey_, index) % span));
}

std::uint64_t ExactInputs::denseBottom(std::uint64_t magnitude) const {
  const std::uint64_t base = std::bit_floor(magnitude);
  const std::uint64_t span = base / (2 * std::bit_ceil(static_cast<std::uint64_t>(spec_.nranks)));
  return base + (span > 0 ? magnitude % span : 0);
}

double ExactInputs::averageInput(std::int64_t wanted, double scale) const {
  const ncclDataType_t type = spec_.type;
  // Where the products of neighbouring inputs step over more than one value of the type (the
  // input's binade is coarser than the target's by more than 1/averageScalar), some integers are
  // skipped, in runs: k * scale misses by about k * (n * averageScalar - 1), which neighbours
  // share and halving keeps. The bottom (P - n) / n of each binade is dense (P: the power of two
  // at or above n, the input's binade is only P/2 times coarser there), so after three
  // neighbours toward zero, k moves there: the power of two at or below k plus k's low bits
  // (less than 1 / (2P) of the binade, so they stay in it); then halving, down to 0.
  std::int64_t k = wanted;
  for (int tries = 1; k != 0; ++tries) {
    const double target = static_cast<double>(k) * scale;
    // The input nearest target / scalar, then its neighbours (half-ulp steps: the spacing
    // halves below a power of two), nearest first, each distinct input once.
    const double guess = roundToType(type, target / averageScalar_);
    const double step = unitInLastPlace(type, guess) / 2;
    double tried[9];
    int ntried = 0;
    for (int d : {0, 1, -1, 2, -2, 3, -3, 4, -4}) {
      const double x = roundToType(type, guess + d * step);
      if (std::find(tried, tried + ntried, x) != tried + ntried) continue;
      tried[ntried++] = x;
      if (std::isfinite(x) && roundToType(type, x * averageScalar_) == target) return x;
    }
    const std::int64_t sign = k > 0 ? 1 : -1;
    const auto magnitude = static_cast<std::uint64_t>(k > 0 ? k : -k);
    if (tries < 4) {
      k -= sign;
    } else if (const std::uint64_t dense = denseBottom(magnitude);
               tries == 4 && dense != magnitude) {
      k = sign * static_cast<std::int64_t>(dense);
    } else {
      k /= 2;
    }
  }
  return 0;
}

double ExactInputs::input(int rank, std::size_t index, double scale) const {
  const std::int64_t p = part(rank, index);
  return premulAverage_ ? averageInput(p, scale) : static_cast<double>(p) * scale;
}

void ExactInputs::values(std::size_t index, double* out) const {
  const double s = scale(index);
  for (int r = 0; r < spec_.nranks; ++r) out[r] = input(r, index, s);
}

double ExactInputs::value(int rank, std::size_t index) const {
  return input(rank, index, scale(index));
}

template <typename Input>
double ExactInputs::combineInputs(Input input) const {
  if (premulAverage_) {  // NCCL's float average: the sum of the rounded products
    double acc = 0;
    for (int r = 0; r < spec_.nranks; ++r)
      acc += roundToType(spec_.type, input(r) * averageScalar_);
    return acc;
  }
  const bool premul = spec_.reduction == Reduction::kPreMulSum;
  double acc = premul ? input(0) * premulScalar(0) : input(0);
  for (int r = 1; r < spec_.nranks; ++r) {
    const double v = input(r);
    switch (spec_.reduction) {
      case Reduction::kProd:
        acc *= v;
        break;
      case Reduction::kMax:
        acc = std::max(acc, v);
        break;
      case Reduction::kMin:
        acc = std::min(acc, v);
        break;
      case Reduction::kPreMulSum:
        acc += premulScalar(r) * v;
        break;
      default:
        acc += v;
        break;  // sum, avg
    }
  }
  return spec_.reduction == Reduction::kAvg ? acc / spec_.nranks : acc;
}

double ExactInputs::combine(const double* values) const {
  return combineInputs([values](int r) { return values[r]; });
}

double ExactInputs::reduced(std::size_t index) const {
  // Rank by rank, without allocating: the benchmarks check millions of elements.
  const double s = scale(index);
  return combineInputs([&](int r) { return input(r, index, s); });
}

}  // namespace braid::verifiable
