// The shared generator's promise: for every type, reduction and rank count, each rank's input is
// representable and the exact result (computed in double) is what any summation order gives,
// with the per-element exponents and the premul-sum scalars the oracle asks for, and for
// ncclAvg as NCCL computes it (floats: every input times 1/nranks rounded to the type, then
// summed); and the inputs are the same wherever they are computed.
#include "verifiable/exact_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "braid/datatypes.h"
#include "verifiable/element_codec.h"
#include "verifiable/input_words.h"

namespace braid::verifiable {
namespace {

constexpr Reduction kReductions[] = {Reduction::kSum, Reduction::kProd, Reduction::kMax,
                                     Reduction::kMin, Reduction::kAvg,  Reduction::kPreMulSum};

// One element reduced as a library may: ranks in a random order, a rounding to the type after
// every step (the pre-multiplication too). A float average premultiplies by 1/nranks as NCCL
// does; an integer one divides the sum at the end.
double reduceInAnyOrder(const ExactInputs& inputs, std::size_t index, std::mt19937& rng) {
  const InputSpec& spec = inputs.spec();
  const bool floatAverage = spec.reduction == Reduction::kAvg && braid::dataType(spec.type).isFloat;
  std::vector<int> order(static_cast<std::size_t>(spec.nranks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  double acc = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int r = order[k];
    double v = inputs.value(r, index);
    if (spec.reduction == Reduction::kPreMulSum)
      v = roundToType(spec.type, v * inputs.premulScalar(r));
    if (floatAverage) v = roundToType(spec.type, v * averageScalar(spec.type, spec.nranks));
    if (k == 0) {
      acc = v;
    } else if (spec.reduction == Reduction::kProd) {
      acc *= v;
    } else if (spec.reduction == Reduction::kMax) {
      acc = std::max(acc, v);
    } else if (spec.reduction == Reduction::kMin) {
      acc = std::min(acc, v);
    } else {
      acc += v;
    }
    acc = roundToType(spec.type, acc);
  }
  return spec.reduction == Reduction::kAvg && !floatAverage ? acc / spec.nranks : acc;
}

TEST(ExactInputs, AnyOrderGivesTheExactResultInEveryType) {
  std::mt19937 rng(5);
  for (const braid::DataType& type : braid::kDataTypes) {
    for (Reduction reduction : kReductions) {
      for (int nranks : {1, 2, 3, 5, 8, 33}) {
        InputSpec spec{type.type, reduction, nranks, 11};
        ExactInputs inputs(spec);
        for (std::size_t i = 0; i < 200; ++i) {
          for (int r = 0; r < nranks; ++r) {
            const double v = inputs.value(r, i);
            ASSERT_EQ(roundToType(type.type, v), v) << type.name << " rank " << r;
          }
          ASSERT_EQ(reduceInAnyOrder(inputs, i, rng), inputs.reduced(i))
              << type.name << " reduction " << static_cast<int>(reduction) << " nranks " << nranks
              << " element " << i;
        }
      }
    }
  }
}

// The oracle's settings: the whole exact range, exponents per element, and fractional scalars
// that differ between ranks; averages at rank counts whose 1/n rounds (3, 5, 6) and at ones
// whose 1/n is exact.
TEST(ExactInputs, ScaledAndFractionalInputsStayExact) {
  std::mt19937 rng(9);
  for (ncclDataType_t type : {ncclFloat16, ncclFloat32, ncclBfloat16, ncclFloat8e4m3}) {
    for (Reduction reduction : {Reduction::kSum, Reduction::kAvg, Reduction::kPreMulSum}) {
      for (int nranks : {1, 3, 5, 6, 8}) {
        InputSpec spec{type, reduction, nranks, 21};
        spec.maxAmplitude = INT64_MAX;
        spec.minExponent = -3;
        spec.maxExponent = 2;
        spec.evenScalar = 0.5;
        spec.oddScalar = 0.25;
        ExactInputs inputs(spec);
        int fractions = 0;
        for (std::size_t i = 0; i < 300; ++i) {
          const double exact = inputs.reduced(i);
          EXPECT_EQ(roundToType(type, exact), exact) << braid::dataType(type).name;
          EXPECT_EQ(reduceInAnyOrder(inputs, i, rng), exact) << braid::dataType(type).name;
          double v = inputs.value(nranks - 1, i);
          // What the rank adds: an average's input is about nranks times its term.
          if (reduction == Reduction::kAvg) v = roundToType(type, v * averageScalar(type, nranks));
          if (v != std::floor(v)) ++fractions;  // an odd integer times a negative power of two
        }
        EXPECT_GT(fractions, 10);
      }
    }
  }
}

// ncclAvg's factor as NCCL rounds it, and float averages that are the premultiplied sum (not
// the quotient of the sum, which fp8 at three ranks misses by 3%) with inputs that still vary.
TEST(ExactInputs, FloatAveragesPremultiplyByTheRoundedInverse) {
  EXPECT_EQ(averageScalar(ncclFloat64, 3), 1.0 / 3);
  EXPECT_EQ(averageScalar(ncclFloat32, 3), static_cast<double>(1.0f / 3));
  EXPECT_EQ(averageScalar(ncclFloat16, 3), 0x1.554p-2);   // 0.333251953125
  EXPECT_EQ(averageScalar(ncclBfloat16, 3), 0x1.56p-2);   // 0.333984375
  EXPECT_EQ(averageScalar(ncclFloat8e4m3, 3), 0x1.6p-2);  // 0.34375
  EXPECT_EQ(averageScalar(ncclFloat8e5m2, 3), 0x1.4p-2);  // 0.3125
  EXPECT_EQ(averageScalar(ncclFloat16, 8), 0.125);
  for (ncclDataType_t type :
       {ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2}) {
    for (int nranks : {3, 7, 11, 13, 49}) {
      ExactInputs inputs(InputSpec{type, Reduction::kAvg, nranks, 31});
      const double scalar = averageScalar(type, nranks);
      // The same integers as a sum's (before the search for inputs that give them).
      ExactInputs sums(InputSpec{type, Reduction::kSum, nranks, 31});
      int nonzero = 0, nonzeroSums = 0;
      std::vector<double> all(static_cast<std::size_t>(nranks));
      for (std::size_t i = 0; i < 200; ++i) {
        inputs.values(i, all.data());
        double sum = 0;
        for (double v : all) sum += roundToType(type, v * scalar);
        ASSERT_EQ(inputs.reduced(i), sum) << braid::dataType(type).name << " nranks " << nranks;
        for (double v : all) nonzero += v != 0;
        for (int r = 0; r < nranks; ++r) nonzeroSums += sums.value(r, i) != 0;
      }
      // An integer no input gives is replaced by the next one toward zero that one does: rare,
      // so nearly every input a sum would have stays nonzero.
      EXPECT_GE(nonzero * 10, nonzeroSums * 9)
          << braid::dataType(type).name << " nranks " << nranks;
    }
  }
}

TEST(ExactInputs, TheSameInputsEverywhere) {
  InputSpec spec{ncclInt32, Reduction::kSum, 4, 77};
  ExactInputs a(spec), b(spec);
  std::vector<double> all(4);
  for (std::size_t i = 0; i < 100; ++i) {
    a.values(i, all.data());
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(all[r], b.value(r, i));
    }
  }
  // Another seed gives other inputs.
  spec.seed = 78;
  ExactInputs c(spec);
  int differ = 0;
  for (std::size_t i = 0; i < 100; ++i) differ += c.value(1, i) != a.value(1, i);
  EXPECT_GT(differ, 90);
}

TEST(ExactInputs, WordsAndIntegers) {
  EXPECT_EQ(inputWord(3, 1, 9), streamWord(rankKey(3, 1), 9));
  EXPECT_NE(inputWord(3, 1, 9), inputWord(3, 2, 9));
  EXPECT_NE(subSeed(3, 1), subSeed(3, 2));
  for (std::uint64_t w = 0; w < 1000; ++w) {
    std::int64_t s = uniformInteger(mix64(w), 5, true), u = uniformInteger(mix64(w), 5, false);
    EXPECT_TRUE(s >= -5 && s <= 5);
    EXPECT_TRUE(u >= 0 && u <= 5);
    double x = unitInterval(mix64(w));
    EXPECT_TRUE(x >= 0 && x < 1);
  }
}

}  // namespace
}  // namespace braid::verifiable
