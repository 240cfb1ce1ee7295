// The public entry points: the run-time variant choice (and its BRAID_KERNEL_ISA cap), copy,
// typeSize, and reduce() reaching the selected variant.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/reduce.h"

namespace braid::kernels {
namespace {

// The CPU's features as the kernel lists them (/proc/cpuinfo's flags): a source of its own, not
// the CPUID reads of dispatch.cc. Empty where there is no such file.
std::set<std::string> cpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
  }
  return {};
}

// The expected variant written from what the test knows: the variants this build compiled
// (kernels/CMakeLists.txt's BRAID_KERNELS_* definitions, passed to this test too), what each needs
// of the CPU, and the cap's families.
TEST(Dispatch, ChoosesFastestVariantUnderCap) {
  const std::set<std::string> flags = cpuFlags();
#if defined(__x86_64__) && defined(__linux__)
  ASSERT_TRUE(flags.count("sse2")) << "/proc/cpuinfo lists no flags";
#endif
  auto has = [&](std::initializer_list<const char*> names) {
    for (const char* name : names)
      if (!flags.count(name)) return false;
    return true;
  };
  bool avx2 = false, avx512 = false, avx512Bf16 = false;
  (void)has;
#if defined(BRAID_KERNELS_AVX2)
  avx2 = has({"avx2", "f16c"});
#endif
#if defined(BRAID_KERNELS_AVX512)
  avx512 = avx2 && has({"avx512f", "avx512dq", "avx512bw", "avx512vl"});
#endif
#if defined(BRAID_KERNELS_AVX512BF16)
  avx512Bf16 = avx512 && has({"avx512_bf16"});
#endif
  const char* cap = std::getenv("BRAID_KERNEL_ISA");
  const std::string family = cap ? cap : "";
  cpu::Variant expected = cpu::Variant::kScalar;
  const char* expectedFamily = "scalar";
  if (family != "scalar" && avx2) expected = cpu::Variant::kAvx2, expectedFamily = "avx2";
  if (family != "scalar" && family != "avx2" && avx512) {
    expected = avx512Bf16 ? cpu::Variant::kAvx512Bf16 : cpu::Variant::kAvx512;
    expectedFamily = "avx512";
  }
  EXPECT_EQ(cpu::selectedVariant(), expected)
      << "cap " << (cap ? cap : "(none)") << ", avx2 " << avx2 << ", avx512 " << avx512
      << ", avx512bf16 " << avx512Bf16;
  EXPECT_STREQ(isaName(), expectedFamily);
}

TEST(Dispatch, ScalarIsAlwaysAvailable) {
  EXPECT_NE(cpu::reduceFor(cpu::Variant::kScalar), nullptr);
  EXPECT_NE(cpu::conversionsFor(cpu::Variant::kScalar).encode, nullptr);
}

TEST(Dispatch, PublicReduceRunsTheSelectedVariant) {
  std::vector<float> acc(1000), local(1000), viaApi(1000), viaVariant(1000);
  std::iota(acc.begin(), acc.end(), 0.25f);
  std::iota(local.begin(), local.end(), -3.5f);
  ReduceOp op;
  op.dtype = 7;
  op.postDiv = 3;
  reduce(op, viaApi.data(), nullptr, acc.data(), local.data(), acc.size(), kApplyPost);
  cpu::reduceFor(cpu::selectedVariant())(op, viaVariant.data(), nullptr, acc.data(), local.data(),
                                         acc.size(), kApplyPost);
  EXPECT_EQ(viaApi, viaVariant);
  EXPECT_EQ(viaApi[10], (10.25f + 6.5f) / 3.0f);
}

TEST(Dispatch, TypeSizes) {
  const std::size_t expected[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int d = 0; d < 12; ++d) EXPECT_EQ(typeSize(d), expected[d]) << d;
  EXPECT_EQ(typeSize(-1), 0u);
  EXPECT_EQ(typeSize(12), 0u);
}

TEST(Copy, OneAndTwoDestinations) {
  for (std::size_t bytes : {0ul, 1ul, 7ul, 64ul, 4095ul, 16384ul, 16385ul, 100003ul}) {
    std::vector<unsigned char> src(bytes + 2);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
    for (bool two : {false, true}) {
      std::vector<unsigned char> out0(bytes + 2, 0xEE), out1(bytes + 2, 0xEE);
      copy(out0.data() + 1, two ? out1.data() + 1 : nullptr, src.data() + 1, bytes);
      EXPECT_EQ(0, std::memcmp(out0.data() + 1, src.data() + 1, bytes)) << bytes;
      EXPECT_EQ(out0.front(), 0xEE);
      EXPECT_EQ(out0.back(), 0xEE);
      if (two) {
        EXPECT_EQ(0, std::memcmp(out1.data() + 1, src.data() + 1, bytes)) << bytes;
        EXPECT_EQ(out1.back(), 0xEE);
      } else {
        EXPECT_EQ(out1[1], 0xEE);
      }
    }
  }
}

TEST(Copy, DestinationEqualToSourceIsSkipped) {
  std::vector<unsigned char> buffer(5000), other(5000);
  std::iota(buffer.begin(), buffer.end(), 0);
  const std::vector<unsigned char> original = buffer;
  copy(buffer.data(), other.data(), buffer.data(), buffer.size());
  EXPECT_EQ(buffer, original);
  EXPECT_EQ(other, original);
}

}  // namespace
}  // namespace braid::kernels
