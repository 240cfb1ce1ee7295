// The layer's fp16/bf16 conversions and accumulation against references from first principles:
// scaling plus nearbyint (round half to even) for narrowing, the formats' formulas for widening.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gradsync/element_ops.h"
#include "verifiable/input_words.h"

namespace braid::gradsync {
namespace {

// Random words for the conversion sweeps: the shared hash over a counter.
uint64_t next(uint64_t& state) {
  return verifiable::mix64(state++);
}

// bf16 from first principles: keep 8 significant bits, round half to even, overflow to inf.
float referenceBfloat16(float x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  // Below 2^-126 bf16 is subnormal: a fixed quantum of 2^-133.
  int e = std::max(std::ilogb(x), -126);
  double scaled = std::ldexp(static_cast<double>(x), 7 - e);
  double rounded = std::ldexp(std::nearbyint(scaled), e - 7);
  if (std::fabs(rounded) > 3.3895313892515355e38) return std::copysign(INFINITY, x);
  return static_cast<float>(rounded);
}

// fp16 from first principles: 11 significant bits, subnormal below 2^-14 (quantum 2^-24), values
// from 65520 (halfway past the largest, 65504) round to infinity.
float referenceHalf(float x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  if (std::fabs(x) >= 65520.0f) return std::copysign(INFINITY, x);
  int e = std::max(std::ilogb(x), -14);
  return static_cast<float>(
      std::ldexp(std::nearbyint(std::ldexp(static_cast<double>(x), 10 - e)), e - 10));
}

double decodeHalf(uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

std::vector<float> interestingFloats() {
  std::vector<float> values = {
      0.0f,          -0.0f,         1.0f,
      -1.0f,         65504.0f,      65519.99f,
      65520.0f,      1e-8f,         5.9604645e-8f,
      2.9802322e-8f, 2.9802326e-8f, 6.1035156e-5f,
      3.4e38f,       -3.4e38f,      std::numeric_limits<float>::denorm_min(),
      INFINITY,      -INFINITY};
  uint64_t state = 7;
  for (int i = 0; i < 2000000; i++)
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(next(state))));
  // Every midpoint between neighbouring fp16 and bf16 values of one binade, and its neighbours.
  for (uint32_t m = 0; m < 1024; m++) {
    float mid = std::bit_cast<float>((127u << 23) | (m << 13) | (1u << 12));
    values.push_back(mid);
    values.push_back(std::nextafter(mid, 0.0f));
    values.push_back(std::nextafter(mid, 4.0f));
  }
  return values;
}

TEST(ElementOps, HalfMatchesFirstPrinciples) {
  for (float x : interestingFloats()) {
    if (std::isnan(x)) continue;
    const float reference = referenceHalf(x);
    const float got = halfToFloat(floatToHalf(x));
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(reference)) << "x=" << x;
  }
  for (uint32_t h = 0; h < 65536; h++) {
    const double reference = decodeHalf(static_cast<uint16_t>(h));
    const float got = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(reference)) {
      EXPECT_TRUE(std::isnan(got)) << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), reference) << "h=" << h;
    ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << "h=" << h;
    ASSERT_EQ(floatToHalf(got), h) << "round trip of " << h;
  }
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
}

TEST(ElementOps, Bfloat16MatchesFirstPrinciples) {
  for (float x : interestingFloats()) {
    if (std::isnan(x)) continue;
    const float reference = referenceBfloat16(x);
    const float got = bfloat16ToFloat(floatToBfloat16(x));
    ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(reference)) << "x=" << x;
  }
  for (uint32_t h = 0; h < 65536; h++) {
    const float widened = bfloat16ToFloat(static_cast<uint16_t>(h));
    if (std::isnan(widened)) continue;
    ASSERT_EQ(floatToBfloat16(widened), h);
  }
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(floatToBfloat16(NAN))));
}

TEST(ElementOps, NarrowAndWidenArrays) {
  std::vector<float> source = {0.1f, -2.5f, 1000.3f, 3.0e-6f, 7.0f};
  std::vector<uint16_t> wire(source.size());
  std::vector<float> back(source.size());
  for (ncclDataType_t t : {ncclFloat16, ncclBfloat16}) {
    narrowFloats(source.data(), wire.data(), source.size(), t);
    widenFloats(wire.data(), back.data(), source.size(), t);
    for (size_t i = 0; i < source.size(); i++) {
      const float expected =
          t == ncclFloat16 ? referenceHalf(source[i]) : referenceBfloat16(source[i]);
      EXPECT_EQ(back[i], expected) << dtypeName(t) << " element " << i;
    }
  }
}

// The array conversions (vectorised, F16C where the CPU has it) agree with the scalar ones on
// every input, at every offset of the vector loops' tails.
TEST(ElementOps, ArrayConversionsMatchScalar) {
  const std::vector<float> values = interestingFloats();
  std::vector<uint16_t> codes(65536);
  for (uint32_t h = 0; h < 65536; h++) codes[h] = static_cast<uint16_t>(h);
  for (ncclDataType_t t : {ncclFloat16, ncclBfloat16}) {
    auto narrow = [&](float x) { return t == ncclFloat16 ? floatToHalf(x) : floatToBfloat16(x); };
    auto widen = [&](uint16_t h) { return t == ncclFloat16 ? halfToFloat(h) : bfloat16ToFloat(h); };
    for (size_t offset : {0u, 1u, 5u}) {
      const size_t count = values.size() - offset;
      std::vector<uint16_t> wire(count);
      narrowFloats(values.data() + offset, wire.data(), count, t);
      for (size_t i = 0; i < count; i++) {
        const float x = values[offset + i];
        if (std::isnan(x))
          ASSERT_TRUE(std::isnan(widen(wire[i]))) << dtypeName(t) << " NaN at " << i;
        else
          ASSERT_EQ(wire[i], narrow(x)) << dtypeName(t) << " x=" << x;
      }
    }
    std::vector<float> wide(codes.size() - 3);
    widenFloats(codes.data() + 3, wide.data(), wide.size(), t);
    for (size_t i = 0; i < wide.size(); i++) {
      const float expected = widen(codes[i + 3]);
      if (std::isnan(expected))
        ASSERT_TRUE(std::isnan(wide[i]));
      else
        ASSERT_EQ(std::bit_cast<uint32_t>(wide[i]), std::bit_cast<uint32_t>(expected)) << i;
    }
  }
}

TEST(ElementOps, AccumulateEveryGradientType) {
  std::vector<double> d = {1.5, -2.25, 1e300};
  std::vector<double> ds = {0.25, 0.25, 1e300};
  accumulate(d.data(), ds.data(), 3, ncclFloat64);
  EXPECT_EQ(d, (std::vector<double>{1.75, -2.0, 2e300}));
  std::vector<float> f = {1.5f, 3.0f};
  std::vector<float> fs = {0.125f, -4.0f};
  accumulate(f.data(), fs.data(), 2, ncclFloat32);
  EXPECT_EQ(f, (std::vector<float>{1.625f, -1.0f}));
  // fp16: 2048 + 1 is not representable (rounds to even: 2048); 0.5 + 0.25 is exact.
  std::vector<uint16_t> h = {floatToHalf(2048.0f), floatToHalf(0.5f)};
  std::vector<uint16_t> hs = {floatToHalf(1.0f), floatToHalf(0.25f)};
  accumulate(h.data(), hs.data(), 2, ncclFloat16);
  EXPECT_EQ(halfToFloat(h[0]), 2048.0f);
  EXPECT_EQ(halfToFloat(h[1]), 0.75f);
  std::vector<uint16_t> b = {floatToBfloat16(256.0f), floatToBfloat16(3.0f)};
  std::vector<uint16_t> bs = {floatToBfloat16(1.0f), floatToBfloat16(-0.5f)};
  accumulate(b.data(), bs.data(), 2, ncclBfloat16);
  EXPECT_EQ(bfloat16ToFloat(b[0]), 256.0f);  // 257 needs 9 bits: ties to even
  EXPECT_EQ(bfloat16ToFloat(b[1]), 2.5f);
}

TEST(ElementOps, NamesAndSizes) {
  EXPECT_EQ(dtypeName(ncclBfloat16), "bfloat16");
  EXPECT_EQ(dtypeName(static_cast<ncclDataType_t>(42)), "dtype(42)");
  EXPECT_EQ(elementSize(ncclFloat64), 8u);
  EXPECT_EQ(elementSize(static_cast<ncclDataType_t>(42)), 0u);
  EXPECT_TRUE(isGradientType(ncclFloat16));
  EXPECT_FALSE(isGradientType(ncclInt32));
  EXPECT_FALSE(isGradientType(ncclFloat8e4m3));
}

}  // namespace
}  // namespace braid::gradsync
