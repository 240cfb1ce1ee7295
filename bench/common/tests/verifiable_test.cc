// The promise behind #wrong: a library that reduces in any order, rounding to the element type
// after every step, still gets every element exactly right; a wrong or unwritten element counts.
#include "verifiable.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "braid/datatypes.h"
#include "collective.h"
#include "datatypes.h"
#include "verifiable/element_codec.h"
#include "verifiable/exact_inputs.h"

namespace braid::bench {
namespace {

using verifiable::loadElement;
using verifiable::roundToType;
using verifiable::storeElement;

// One element reduced the way a correct library may do it: any rank order, one rounding per
// step; premul-sum scales each input first, and so does a float avg (by 1/n rounded to the type,
// as NCCL); an integer avg divides once at the end.
double reduceLikeALibrary(const DataSpec& spec, std::size_t index, std::mt19937& rng) {
  const bool floatAverage = spec.opIndex == ncclAvg && braid::dataType(spec.type).isFloat;
  std::vector<int> order(static_cast<std::size_t>(spec.nranks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  double acc = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    int r = order[k];
    double v = inputValue(spec, r, index);
    if (spec.opIndex == kOpMulSum) v = roundToType(spec.type, v * premulScalar(r));
    if (floatAverage)
      v = roundToType(spec.type, v * verifiable::averageScalar(spec.type, spec.nranks));
    if (k == 0) {
      acc = v;
      continue;
    }
    switch (spec.opIndex) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      default:
        acc += v;
        break;
    }
    acc = roundToType(spec.type, acc);
  }
  if (spec.opIndex == ncclAvg && !floatAverage) acc = roundToType(spec.type, acc / spec.nranks);
  return acc;
}

class EveryTypeAndOp : public ::testing::TestWithParam<int> {};

TEST_P(EveryTypeAndOp, AnyOrderGivesTheExpectedResult) {
  const TypeInfo& type = kTypes[GetParam()];
  std::mt19937 rng(GetParam());
  constexpr std::size_t kCount = 257;
  std::vector<unsigned char> result(kCount * type.size);
  for (int nranks : {1, 2, 3, 4, 7, 8, 16, 33, 130}) {
    for (int op = 0; op < kNumOps; ++op) {
      DataSpec spec{type.type, op, nranks, 42};
      for (std::size_t i = 0; i < kCount; ++i) {
        storeElement(result.data(), i, type.type, reduceLikeALibrary(spec, 1000 + i, rng));
      }
      EXPECT_EQ(countWrongReduced(result.data(), kCount, 1000, spec), 0)
          << type.name << " " << kOpNames[op] << " nranks=" << nranks;
    }
  }
}

TEST_P(EveryTypeAndOp, InputsAreRepresentableAndVaried) {
  const TypeInfo& type = kTypes[GetParam()];
  constexpr std::size_t kCount = 512;
  std::vector<unsigned char> buffer(kCount * type.size);
  for (int op = 0; op < kNumOps; ++op) {
    DataSpec spec{type.type, op, 4, 7};
    fillInput(buffer.data(), kCount, 0, spec, 2);
    int distinct = 0;
    for (std::size_t i = 0; i < kCount; ++i) {
      double v = loadElement(buffer.data(), i, type.type);
      ASSERT_EQ(v, inputValue(spec, 2, i)) << type.name << " " << kOpNames[op];
      if (i > 0 && v != loadElement(buffer.data(), i - 1, type.type)) ++distinct;
    }
    EXPECT_GT(distinct, 50) << type.name << " " << kOpNames[op];
  }
}

TEST_P(EveryTypeAndOp, WrongAndUnwrittenElementsCount) {
  const TypeInfo& type = kTypes[GetParam()];
  std::mt19937 rng(1);
  constexpr std::size_t kCount = 100;
  std::vector<unsigned char> result(kCount * type.size);
  for (int op = 0; op < kNumOps; ++op) {
    DataSpec spec{type.type, op, 5, 3};
    poisonOutput(result.data(), kCount, type.type);
    EXPECT_EQ(countWrongReduced(result.data(), kCount, 0, spec), 100) << type.name;
    for (std::size_t i = 0; i < kCount; ++i) {
      storeElement(result.data(), i, type.type, reduceLikeALibrary(spec, i, rng));
    }
    double good = loadElement(result.data(), 17, type.type);
    // A different representable value, far enough to fail even the avg tolerance.
    storeElement(result.data(), 17, type.type, std::fabs(good) > 1 ? good / 2 : 4);
    EXPECT_EQ(countWrongReduced(result.data(), kCount, 0, spec), 1)
        << type.name << " " << kOpNames[op] << " " << good;
  }
}

TEST_P(EveryTypeAndOp, OverwrittenPoisonIsCounted) {
  const TypeInfo& type = kTypes[GetParam()];
  constexpr std::size_t kCount = 64;
  std::vector<unsigned char> buffer(kCount * type.size);
  poisonOutput(buffer.data(), kCount, type.type);
  EXPECT_EQ(countOverwritten(buffer.data(), kCount, type.type), 0) << type.name;
  storeElement(buffer.data(), 5, type.type, 0.0);
  storeElement(buffer.data(), 63, type.type, 1.0);
  EXPECT_EQ(countOverwritten(buffer.data(), kCount, type.type), 2) << type.name;
}

TEST_P(EveryTypeAndOp, CopiedBlocksOfEachSourceAndRunDiffer) {
  const TypeInfo& type = kTypes[GetParam()];
  constexpr std::size_t kCount = 256;
  constexpr std::int64_t kHalf = kCount / 2;
  std::vector<unsigned char> block(kCount * type.size);
  CollCall call;
  call.type = type.type;
  call.nranks = 4;
  call.seed = 7;
  fillInput(block.data(), kCount, 0, call.copiedSpec(2), 0);
  EXPECT_EQ(countWrongCopied(block.data(), kCount, 0, call.copiedSpec(2), 0), 0) << type.name;
  // Even the 8-bit floats take 17 or more values: most elements of another block differ.
  EXPECT_GT(countWrongCopied(block.data(), kCount, 0, call.copiedSpec(3), 0), kHalf);
  call.seed = 8;
  EXPECT_GT(countWrongCopied(block.data(), kCount, 0, call.copiedSpec(2), 0), kHalf);
}

INSTANTIATE_TEST_SUITE_P(Types, EveryTypeAndOp, ::testing::Range(0, kNumTypes),
                         [](const auto& info) {
                           return std::string(kTypes[info.param].testsName);
                         });

TEST(Verifiable, CopiedDataIsCheckedAgainstTheSourceRank) {
  DataSpec spec{ncclInt32, ncclSum, 4, 9};
  std::vector<std::int32_t> data(64);
  fillInput(data.data(), data.size(), 128, spec, 3);
  EXPECT_EQ(countWrongCopied(data.data(), data.size(), 128, spec, 3), 0);
  EXPECT_GT(countWrongCopied(data.data(), data.size(), 128, spec, 2), 30);
}

}  // namespace
}  // namespace braid::bench
