// The CUDA kernels' element definition (kernels/cuda/element.h), compiled by nvcc and run on the
// host, against the independent reference and the CPU kernels for every dtype x op, over the
// same layouts and counts as the CPU variants (reduce_cases.h). Needs no GPU: this is the
// function every device thread applies, so a mismatch here is a device mismatch too.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/element.h"
#include "kernels/reduce.h"
#include "tests/kernels/reduce_cases.h"
#include "tests/kernels/reference.h"

namespace braid::kernels::testing {
namespace {

/// kernels::reduce's contract, one ReduceElement::apply per element (in index order, so exact
/// aliasing of out0 with acc or local is safe, as in the kernel).
void reduceByElement(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                     std::size_t count, unsigned flags) {
  cuda::withDtypeAndOp(op.dtype, op.op, [&]<int D, class Op>() {
    using S = typename ElementType<D>::Storage;
    const cuda::ElementParams<D> params = cuda::elementParams<D>(op, acc != nullptr, flags);
    for (std::size_t i = 0; i < count; ++i) {
      S a{}, l;
      if (acc) std::memcpy(&a, static_cast<const S*>(acc) + i, sizeof(S));
      std::memcpy(&l, static_cast<const S*>(local) + i, sizeof(S));
      const S value = cuda::ReduceElement<D, Op>::apply(params, a, l);
      std::memcpy(static_cast<S*>(out0) + i, &value, sizeof(S));
      if (out1) std::memcpy(static_cast<S*>(out1) + i, &value, sizeof(S));
    }
  });
}

using Param = std::tuple<int, OpKind>;
class CudaElementTest : public ::testing::TestWithParam<Param> {};

TEST_P(CudaElementTest, MatchesReferenceBitwise) {
  const auto [dtype, kind] = GetParam();
  const std::vector<std::size_t> counts(std::begin(kCounts), std::end(kCounts));
  EXPECT_EQ(checkAllLayouts(reduceByElement, dtype, kind,
                            7001u * dtype + 13u * static_cast<int>(kind), counts),
            "");
}

/// The element definition and the CPU kernels agree on the same random inputs (NaN payloads
/// aside).
TEST_P(CudaElementTest, MatchesCpuKernelsBitwise) {
  const auto [dtype, kind] = GetParam();
  std::mt19937_64 rng(4099u * dtype + static_cast<unsigned>(kind));
  constexpr std::size_t kCount = 4099;
  const std::size_t bytes = kCount * typeSize(dtype);
  for (unsigned flags : kFlagSets) {
    const ReduceOp op = makeOp(dtype, kind, rng);
    const std::vector<std::uint64_t> accBits = randomElements(dtype, kCount, rng);
    const std::vector<std::uint64_t> localBits = randomElements(dtype, kCount, rng);
    std::vector<unsigned char> acc(bytes), local(bytes), cpu(bytes, 0x5A), element(bytes, 0xA5);
    for (std::size_t i = 0; i < kCount; ++i) {
      storeElement(dtype, acc.data(), i, accBits[i]);
      storeElement(dtype, local.data(), i, localBits[i]);
    }
    for (const bool hasAcc : {true, false}) {
      const void* a = hasAcc ? acc.data() : nullptr;
      reduce(op, cpu.data(), nullptr, a, local.data(), kCount, flags);
      reduceByElement(op, element.data(), nullptr, a, local.data(), kCount, flags);
      for (std::size_t i = 0; i < kCount; ++i) {
        // Same bits, or both NaN: a NaN's payload depends on operand order and the
        // conversion path (SIMD or scalar), and is not part of the contract (ops.h).
        ASSERT_TRUE(sameResult(dtype, loadElement(dtype, cpu.data(), i),
                               loadElement(dtype, element.data(), i)))
            << "element " << i << " flags " << flags << (hasAcc ? " with acc" : " without acc");
      }
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<Param>& info) {
  const auto [dtype, kind] = info.param;
  return std::string(dtypeName(dtype)) + "_" + opName(kind);
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, CudaElementTest,
                         ::testing::Combine(::testing::Range(0, kDtypeCount),
                                            ::testing::ValuesIn(kAllOps)),
                         paramName);

}  // namespace
}  // namespace braid::kernels::testing
