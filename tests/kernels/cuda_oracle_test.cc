// kernels/ops.h against the host implementations in CUDA's own headers (cuda_fp16.h,
// cuda_bf16.h, cuda_fp8.h): the conversions the CUDA kernels and NCCL use. Built only when
// those headers are found; needs no GPU and no CUDA library.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kernels/ops.h"
#include "tests/kernels/reference.h"

namespace braid::kernels::testing {
namespace {

std::uint32_t cudaEncode(int d, float x) {
  switch (d) {
    case dtype::kFloat16:
      return static_cast<__half_raw>(__float2half_rn(x)).x;
    case dtype::kBfloat16:
      return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(x)).x;
    case dtype::kFp8E4M3:
      return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    default:
      return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
  }
}

float cudaDecode(int d, std::uint32_t code) {
  const auto byte = static_cast<__nv_fp8_storage_t>(code);
  __half_raw raw;
  switch (d) {
    case dtype::kFloat16:
      raw.x = static_cast<unsigned short>(code);
      return __half2float(raw);
    case dtype::kBfloat16: {
      __nv_bfloat16_raw b;
      b.x = static_cast<unsigned short>(code);
      return __bfloat162float(b);
    }
    case dtype::kFp8E4M3:
      return __half2float(__nv_cvt_fp8_to_halfraw(byte, __NV_E4M3));
    default:
      return __half2float(__nv_cvt_fp8_to_halfraw(byte, __NV_E5M2));
  }
}

std::uint32_t opsEncode(int d, float x) {
  switch (d) {
    case dtype::kFloat16:
      return floatToHalf(x);
    case dtype::kBfloat16:
      return floatToBf16(x);
    case dtype::kFp8E4M3:
      return floatToFp8<Fp8E4M3Format>(x);
    default:
      return floatToFp8<Fp8E5M2Format>(x);
  }
}

float opsDecode(int d, std::uint32_t code) {
  switch (d) {
    case dtype::kFloat16:
      return halfToFloat(static_cast<std::uint16_t>(code));
    case dtype::kBfloat16:
      return bf16ToFloat(static_cast<std::uint16_t>(code));
    case dtype::kFp8E4M3:
      return fp8E4M3ToFloat(static_cast<std::uint8_t>(code));
    default:
      return fp8E5M2ToFloat(static_cast<std::uint8_t>(code));
  }
}

class CudaOracleTest : public ::testing::TestWithParam<int> {};

TEST_P(CudaOracleTest, DecodeMatchesCuda) {
  const int d = GetParam();
  const std::uint32_t codes = typeSize(d) == 1 ? 256u : 65536u;
  for (std::uint32_t code = 0; code < codes; ++code) {
    const float ours = opsDecode(d, code), cuda = cudaDecode(d, code);
    if (std::isnan(cuda)) {
      ASSERT_TRUE(std::isnan(ours)) << std::hex << code;
    } else {
      ASSERT_EQ(floatBits(ours), floatBits(cuda)) << std::hex << code;
    }
  }
}

TEST_P(CudaOracleTest, EncodeMatchesCuda) {
  const int d = GetParam();
  for (float x : roundingProbes(d)) {
    const std::uint32_t ours = opsEncode(d, x), cuda = cudaEncode(d, x);
    ASSERT_TRUE(sameResult(d, cuda, ours))
        << std::hexfloat << x << std::hex << " cuda 0x" << cuda << " ours 0x" << ours;
  }
}

INSTANTIATE_TEST_SUITE_P(NarrowFloats, CudaOracleTest,
                         ::testing::Values(dtype::kFloat16, dtype::kBfloat16, dtype::kFp8E4M3,
                                           dtype::kFp8E5M2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(dtypeName(info.param));
                         });

}  // namespace
}  // namespace braid::kernels::testing
