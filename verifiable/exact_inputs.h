// Inputs whose reduction is known exactly, shared by the benchmarks (#wrong) and the tests
// (every element checked): nccl-tests' idea of integer partitions.
//
// Every rank's value at element i is a function of (seed, rank, i) (input_words.h). The values
// are integers (times a power of two per element where asked) bounded so that, for the type,
// every partial result in any reduction order is exactly representable: a correct library gives
// the exact answer however it splits, orders or rounds the work. Sums, averages and premul-sums
// bound each rank's share of the type's exact range; when the ranks outnumber it, only every
// stride-th rank contributes (+-1) to an element. Products multiply +-1 and +-2, at most as many
// 2s as the type can double. Max and min take integers within the same bounds.
//
// ncclAvg follows NCCL: integers sum and divide (truncating); floating types multiply each
// rank's input by averageScalar (1/nranks rounded to the type) and sum the rounded products. For
// floats, each rank's input is chosen so that its rounded product is one of the integers above
// (where no input of the type gives that integer, a nearby smaller one, or one low in
// its binade), so the sum of the
// products is exact in any order too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccl.h"

namespace braid::verifiable {

/// The reduction the inputs are made for: ncclRedOp_t's built-ins and a per-rank premul-sum.
enum class Reduction { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4, kPreMulSum = 5 };

struct InputSpec {
  ncclDataType_t type = ncclFloat32;
  Reduction reduction = Reduction::kSum;
  int nranks = 1;
  std::uint64_t seed = 0;
  /// Largest |input| of sum-like and max/min elements (smaller where the type needs it): keeps
  /// printed numbers readable. The tests that probe the whole exact range raise it.
  std::int64_t maxAmplitude = 100000;
  /// Floating types: element i's inputs are integers times 2^e, one e per element for all ranks,
  /// drawn from [minExponent, maxExponent]; the caller keeps every product in the type's range.
  int minExponent = 0;
  int maxExponent = 0;
  /// kPreMulSum: the scalars of even and odd ranks (powers of two). Different scalars catch a
  /// rank that applies another rank's.
  double evenScalar = 1;
  double oddScalar = 2;
};

/// ncclAvg's factor for a floating type, as NCCL computes it: 1.0 / nranks in double, through
/// float for every type but double, rounded to the type.
double averageScalar(ncclDataType_t type, int nranks);

/// The premul-sum scalar of rank under spec (evenScalar or oddScalar).
inline double premulScalar(const InputSpec& spec, int rank) {
  return (rank & 1) ? spec.oddScalar : spec.evenScalar;
}

class ExactInputs {
 public:
  explicit ExactInputs(const InputSpec& spec);

  /// What rank contributes at element index.
  double value(int rank, std::size_t index) const;
  /// Every rank's value at element index (out[0 .. nranks)).
  void values(std::size_t index, double* out) const;
  double premulScalar(int rank) const { return verifiable::premulScalar(spec_, rank); }
  /// The exact reduction over all ranks at element index. kAvg: for floats the sum of every
  /// rank's input times averageScalar, each product rounded to the type (exact in any order);
  /// for integers the sum divided by nranks, not truncated (the caller truncates).
  double reduced(std::size_t index) const;
  /// The same from every rank's values at one element (from values()), when the caller has them.
  double combine(const double* values) const;

  const InputSpec& spec() const { return spec_; }

 private:
  enum class Shape { kSumLike, kProduct, kMinMax };

  std::int64_t part(int rank, std::size_t index) const;  ///< the integer before any scaling
  bool contributes(int rank, std::size_t index) const;
  double scale(std::size_t index) const;
  /// Floating kAvg: an input whose product with averageScalar rounds to wanted * scale, or to
  /// a nearby smaller integer (or one low in its binade) times scale where no input gives
  /// that one (0 at worst).
  double averageInput(std::int64_t wanted, double scale) const;
  /// An integer at or below magnitude in the dense bottom of its binade (see averageInput).
  std::uint64_t denseBottom(std::uint64_t magnitude) const;
  double input(int rank, std::size_t index, double scale) const;  ///< what rank contributes
  template <typename Input>
  double combineInputs(Input input) const;  ///< input(rank): that rank's value

  InputSpec spec_;
  bool isSigned_;
  bool premulAverage_ = false;  ///< kAvg on a floating type
  double averageScalar_ = 1;
  Shape shape_ = Shape::kSumLike;
  std::int64_t amplitude_ = 1;
  std::int64_t stride_ = 1;
  double fixedScale_ = 1;  ///< 2^minExponent when the exponent range is one value
  std::vector<std::uint64_t> rankKeys_;
  std::uint64_t exponentKey_;
};

}  // namespace braid::verifiable
