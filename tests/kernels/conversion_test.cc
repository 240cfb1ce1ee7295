// The narrow-float conversions of kernels/ops.h against first principles (tests/kernels/
// reference.h), and every variant's SIMD conversions against ops.h, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "tests/kernels/reference.h"

namespace braid::kernels::testing {
namespace {

constexpr int kNarrowDtypes[] = {dtype::kFloat16, dtype::kBfloat16, dtype::kFp8E4M3,
                                 dtype::kFp8E5M2};

std::uint32_t codeCount(int d) {
  return typeSize(d) == 1 ? 256u : 65536u;
}

float scalarDecode(int d, std::uint32_t code) {
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

std::uint32_t scalarEncode(int d, float x) {
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

float fromBits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

class ConversionTest : public ::testing::TestWithParam<int> {};

TEST_P(ConversionTest, DecodeMatchesFirstPrinciples) {
  const int d = GetParam();
  for (std::uint32_t code = 0; code < codeCount(d); ++code) {
    const float got = scalarDecode(d, code);
    const double expected = exactValue(d, code);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << code;
    } else {
      EXPECT_EQ(static_cast<double>(got), expected) << std::hex << code;
      EXPECT_EQ(std::signbit(got), std::signbit(expected)) << std::hex << code;
    }
  }
}

/// Every code survives decode + encode; NaN stays NaN; e5m2 +-inf saturates to +-57344.
TEST_P(ConversionTest, EveryCodeRoundTrips) {
  const int d = GetParam();
  for (std::uint32_t code = 0; code < codeCount(d); ++code) {
    const std::uint32_t back = scalarEncode(d, scalarDecode(d, code));
    if (isNan(d, code)) {
      EXPECT_TRUE(isNan(d, back)) << std::hex << code << " -> " << back;
    } else if (std::isinf(exactValue(d, code)) && d == dtype::kFp8E5M2) {
      EXPECT_EQ(back, code - 1) << "e5m2 inf saturates to max finite (SATFINITE)";
    } else {
      EXPECT_EQ(back, code) << std::hex << code;
    }
  }
}

TEST_P(ConversionTest, EncodeIsNearestEven) {
  const int d = GetParam();
  for (float x : roundingProbes(d)) {
    const std::uint64_t expected = nearestEncoding(d, x);
    const std::uint32_t got = scalarEncode(d, x);
    ASSERT_TRUE(sameResult(d, expected, got))
        << std::hexfloat << x << std::hex << " expected 0x" << expected << " got 0x" << got;
  }
}

/// Each variant's vector conversions give exactly the bits of the ops.h scalar ones (NaN
/// payloads included), over all codes and the interesting floats.
TEST_P(ConversionTest, EveryVariantMatchesScalarBits) {
  const int d = GetParam();
  const std::size_t size = typeSize(d);
  const std::vector<float> floats = roundingProbes(d);
  std::vector<unsigned char> codes(codeCount(d) * size);
  for (std::uint32_t c = 0; c < codeCount(d); ++c) std::memcpy(&codes[c * size], &c, size);
  for (int v = 0; v < cpu::kVariantCount; ++v) {
    const auto variant = static_cast<cpu::Variant>(v);
    const cpu::Conversions conv = cpu::conversionsFor(variant);
    if (conv.decode == nullptr) continue;
    SCOPED_TRACE(cpu::variantName(variant));
    std::vector<float> decoded(codeCount(d));
    conv.decode(d, codes.data(), decoded.data(), decoded.size());
    for (std::uint32_t c = 0; c < codeCount(d); ++c) {
      ASSERT_EQ(floatBits(decoded[c]), floatBits(scalarDecode(d, c))) << std::hex << c;
    }
    std::vector<unsigned char> encoded(floats.size() * size);
    conv.encode(d, floats.data(), encoded.data(), floats.size());
    for (std::size_t i = 0; i < floats.size(); ++i) {
      std::uint32_t got = 0;
      std::memcpy(&got, &encoded[i * size], size);
      ASSERT_EQ(got, scalarEncode(d, floats[i])) << std::hexfloat << floats[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(NarrowFloats, ConversionTest, ::testing::ValuesIn(kNarrowDtypes),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(dtypeName(info.param));
                         });

// Known rounding cases, written out.

TEST(KnownRounding, Fp16) {
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3C00);             // tie, even stays
  EXPECT_EQ(floatToHalf(1.0f + 3 * 0x1p-11f), 0x3C02);         // tie, odd rounds up
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // above the tie
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // overflow to inf
  EXPECT_EQ(floatToHalf(-1e30f), 0xFC00);
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);  // tie to even (zero)
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002);
  EXPECT_EQ(floatToHalf(0x1.ffcp-15f), 0x0400);  // tie above the largest subnormal: up
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(NAN) & 0x7E00, 0x7E00);
  EXPECT_EQ(floatToHalf(fromBits(0x7FA12345u)), 0x7F09);  // payload kept, made quiet (as F16C)
}

TEST(KnownRounding, Bf16) {
  EXPECT_EQ(floatToBf16(fromBits(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(floatToBf16(fromBits(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(floatToBf16(fromBits(0x3F808001u)), 0x3F81);
  EXPECT_EQ(floatToBf16(fromBits(0x00018000u)), 0x0002);  // subnormal tie (not flushed)
  EXPECT_EQ(floatToBf16(fromBits(0x007FFFFFu)), 0x0080);  // subnormal rounds to min normal
  EXPECT_EQ(floatToBf16(3.4028235e38f), 0x7F80);          // overflow to inf
  EXPECT_EQ(floatToBf16(fromBits(0x7F800001u)), 0x7FC0);  // NaN stays NaN
  EXPECT_EQ(floatToBf16(fromBits(0xFFC12345u)), 0xFFC1);
}

TEST(KnownRounding, Fp8E4M3) {
  auto e4m3 = [](float x) { return floatToFp8<Fp8E4M3Format>(x); };
  EXPECT_EQ(e4m3(448.0f), 0x7E);
  EXPECT_EQ(e4m3(464.0f), 0x7E);  // tie between 448 and (NaN code) 480: saturates
  EXPECT_EQ(e4m3(1e9f), 0x7E);
  EXPECT_EQ(e4m3(INFINITY), 0x7E);  // SATFINITE: inf saturates too
  EXPECT_EQ(e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(e4m3(NAN), 0x7F);
  EXPECT_EQ(e4m3(0x1p-9f), 0x01);    // smallest subnormal
  EXPECT_EQ(e4m3(0x1p-10f), 0x00);   // tie to even (zero)
  EXPECT_EQ(e4m3(0x1.8p-9f), 0x02);  // tie, odd rounds up
  EXPECT_EQ(e4m3(-0x1p-12f), 0x80);  // underflow keeps the sign
  EXPECT_EQ(e4m3(1.0625f), 0x38);    // 1 + 1/16: tie, even stays
  EXPECT_EQ(e4m3(1.1875f), 0x3A);    // 1 + 3/16: tie, odd rounds up
  EXPECT_EQ(fp8E4M3ToFloat(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(fp8E4M3ToFloat(0xFF)));
}

TEST(KnownRounding, Fp8E5M2) {
  auto e5m2 = [](float x) { return floatToFp8<Fp8E5M2Format>(x); };
  EXPECT_EQ(e5m2(57344.0f), 0x7B);
  EXPECT_EQ(e5m2(61440.0f), 0x7B);  // would round to inf: saturates
  EXPECT_EQ(e5m2(INFINITY), 0x7B);
  EXPECT_EQ(e5m2(-INFINITY), 0xFB);
  EXPECT_EQ(e5m2(NAN), 0x7F);
  EXPECT_EQ(e5m2(0x1p-16f), 0x01);
  EXPECT_EQ(e5m2(0x1p-17f), 0x00);
  EXPECT_EQ(e5m2(1.125f), 0x3C);  // 1 + 1/8: tie, even stays
  EXPECT_EQ(e5m2(1.375f), 0x3E);  // 1 + 3/8: tie, odd rounds up
  EXPECT_TRUE(std::isinf(fp8E5M2ToFloat(0x7C)));
  EXPECT_TRUE(std::isnan(fp8E5M2ToFloat(0x7D)));
}

}  // namespace
}  // namespace braid::kernels::testing
