// Every CPU variant x dtype x op against the independent reference (tests/kernels/reference.h),
// bit for bit, over counts around the vector and tile widths, misaligned pointers, with and
// without acc and out1, and with out0 aliasing acc or local (the cases: reduce_cases.h).
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/reduce.h"
#include "tests/kernels/reduce_cases.h"
#include "tests/kernels/reference.h"

namespace braid::kernels::testing {
namespace {

using Param = std::tuple<cpu::Variant, int, OpKind>;

class ReduceTest : public ::testing::TestWithParam<Param> {};

TEST_P(ReduceTest, MatchesReferenceBitwise) {
  const auto [variant, dtype, kind] = GetParam();
  const cpu::ReduceFn reduceFn = cpu::reduceFor(variant);
  if (reduceFn == nullptr)
    GTEST_SKIP() << "this CPU cannot run the " << cpu::variantName(variant)
                 << " variant (or this build has none)";
  const std::uint64_t seed =
      1000003u * static_cast<unsigned>(variant) + 1009u * dtype + static_cast<unsigned>(kind);
  const std::vector<std::size_t> counts(std::begin(kCounts), std::end(kCounts));
  EXPECT_EQ(checkAllLayouts(reduceFn, dtype, kind, seed, counts), "");
}

std::string paramName(const ::testing::TestParamInfo<Param>& info) {
  const auto [variant, dtype, kind] = info.param;
  return std::string(cpu::variantName(variant)) + "_" + dtypeName(dtype) + "_" + opName(kind);
}

INSTANTIATE_TEST_SUITE_P(
    AllVariants, ReduceTest,
    ::testing::Combine(::testing::Values(cpu::Variant::kScalar, cpu::Variant::kAvx2,
                                         cpu::Variant::kAvx512, cpu::Variant::kAvx512Bf16),
                       ::testing::Range(0, kDtypeCount), ::testing::ValuesIn(kAllOps)),
    paramName);

}  // namespace
}  // namespace braid::kernels::testing
