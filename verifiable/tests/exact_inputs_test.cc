// The shared generator's promise: for every type, reduction and rank count, each rank's input is
// representable and the exact result (computed in double) is what any summation order gives,
// with the per-element exponents, the premul-sum scalars and the balanced averages the oracle
// asks for; and the inputs are the same wherever they are computed.
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
// every step (the pre-multiplication too).
double reduceInAnyOrder(const ExactInputs& inputs, std::size_t index, std::mt19937& rng) {
  const InputSpec& spec = inputs.spec();
  std::vector<int> order(static_cast<std::size_t>(spec.nranks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  double acc = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const int r = order[k];
    double v = inputs.value(r, index);
    if (spec.reduction == Reduction::kPreMulSum)
      v = roundToType(spec.type, v * inputs.premulScalar(r));
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
  return spec.reduction == Reduction::kAvg ? acc / spec.nranks : acc;
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

// The oracle's settings: the whole exact range, exponents per element, fractional scalars
// that differ between ranks, and averages that divide exactly (so the mean rounds to itself).
TEST(ExactInputs, ScaledFractionalAndBalancedInputsStayExact) {
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
        spec.exactAverage = true;
        ExactInputs inputs(spec);
        int fractions = 0;
        for (std::size_t i = 0; i < 300; ++i) {
          const double exact = inputs.reduced(i);
          EXPECT_EQ(roundToType(type, exact), exact) << braid::dataType(type).name;
          EXPECT_EQ(reduceInAnyOrder(inputs, i, rng), exact) << braid::dataType(type).name;
          const double v = inputs.value(nranks - 1, i);
          if (v != std::floor(v)) ++fractions;  // an odd integer times a negative power of two
        }
        EXPECT_GT(fractions, 10);
      }
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
