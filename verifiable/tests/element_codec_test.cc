// The element codecs of every type against known encodings: half, bfloat16 and fp8 bit by bit,
// float and double against the C++ conversions, and the narrow types' tables against the layout
// code.
#include "verifiable/element_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace braid::verifiable {
namespace {

constexpr const FloatFormat& kHalfFormat = braid::dataType(ncclFloat16).format;
constexpr const FloatFormat& kBfloat16Format = braid::dataType(ncclBfloat16).format;
constexpr const FloatFormat& kE4m3Format = braid::dataType(ncclFloat8e4m3).format;
constexpr const FloatFormat& kE5m2Format = braid::dataType(ncclFloat8e5m2).format;

TEST(ElementCodec, HalfEncodings) {
  EXPECT_EQ(encodeFloat(kHalfFormat, 1.0), 0x3c00u);
  EXPECT_EQ(encodeFloat(kHalfFormat, -2.0), 0xc000u);
  EXPECT_EQ(encodeFloat(kHalfFormat, 65504.0), 0x7bffu);
  EXPECT_EQ(encodeFloat(kHalfFormat, 65520.0), 0x7c00u);               // rounds to infinity
  EXPECT_EQ(encodeFloat(kHalfFormat, std::ldexp(1.0, -24)), 0x0001u);  // smallest subnormal
  EXPECT_EQ(encodeFloat(kHalfFormat, 2049.0), 0x6800u);                // tie to even: 2048
  EXPECT_EQ(encodeFloat(kHalfFormat, 2051.0), 0x6802u);                // tie to even: 2052
  EXPECT_EQ(decodeFloat(kHalfFormat, 0x3555), 0.333251953125);
  EXPECT_TRUE(std::isnan(decodeFloat(kHalfFormat, 0xffff)));
}

TEST(ElementCodec, Bfloat16Encodings) {
  EXPECT_EQ(encodeFloat(kBfloat16Format, 1.0), 0x3f80u);
  EXPECT_EQ(encodeFloat(kBfloat16Format, 257.0), 0x4380u);  // tie to even: 256
  EXPECT_EQ(encodeFloat(kBfloat16Format, -3.0), 0xc040u);
  EXPECT_EQ(decodeFloat(kBfloat16Format, 0x7f80), INFINITY);
}

TEST(ElementCodec, Fp8Encodings) {
  // e4m3 (fn): no infinity, 448 is the largest value, 0x7f is NaN.
  EXPECT_EQ(encodeFloat(kE4m3Format, 448.0), 0x7eu);
  EXPECT_EQ(encodeFloat(kE4m3Format, 1.0), 0x38u);
  EXPECT_EQ(encodeFloat(kE4m3Format, 17.0), 0x58u);  // tie to even: 16
  EXPECT_EQ(encodeFloat(kE4m3Format, std::ldexp(1.0, -9)), 0x01u);
  EXPECT_TRUE(std::isnan(decodeFloat(kE4m3Format, 0x7f)));
  EXPECT_TRUE(std::isnan(decodeFloat(kE4m3Format, 0xff)));
  EXPECT_EQ(decodeFloat(kE4m3Format, 0x7e), 448.0);
  // e5m2: IEEE-like, 57344 is the largest finite value.
  EXPECT_EQ(encodeFloat(kE5m2Format, 57344.0), 0x7bu);
  EXPECT_EQ(encodeFloat(kE5m2Format, 1.0), 0x3cu);
  EXPECT_EQ(decodeFloat(kE5m2Format, 0x7c), INFINITY);
  EXPECT_TRUE(std::isnan(decodeFloat(kE5m2Format, 0xff)));
}

TEST(ElementCodec, EveryEncodingRoundTrips) {
  for (const FloatFormat* format : {&kE4m3Format, &kE5m2Format}) {
    for (std::uint32_t bits = 0; bits < 256; ++bits) {
      double value = decodeFloat(*format, bits);
      if (std::isnan(value)) continue;
      EXPECT_EQ(encodeFloat(*format, value), bits) << bits;
    }
  }
  for (const FloatFormat* format : {&kHalfFormat, &kBfloat16Format}) {
    for (std::uint32_t bits = 0; bits < 65536; ++bits) {
      double value = decodeFloat(*format, bits);
      if (std::isnan(value)) continue;
      ASSERT_EQ(encodeFloat(*format, value), bits) << bits;
    }
  }
}

// The 8- and 16-bit types decode from a table and encode by searching it: every pattern, and
// every value between and around them (each value, each midpoint of neighbours and the doubles
// just beside it, past the largest finite value, below the smallest subnormal, NaN, random
// doubles across the range), must give the layout code's answer.
TEST(ElementCodec, NarrowTablesAgreeWithTheLayoutCode) {
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  auto random = [&state] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (const FloatFormat* format : {&kHalfFormat, &kBfloat16Format, &kE4m3Format, &kE5m2Format}) {
    const int width = 1 + format->exponentBits + format->mantissaBits;
    const std::uint64_t patterns = std::uint64_t{1} << width;
    auto same = [format](double value) {
      const std::uint64_t want = encodeFloatByLayout(*format, value);
      const std::uint64_t got = encodeFloat(*format, value);
      EXPECT_EQ(got, want) << "width " << format->exponentBits + format->mantissaBits + 1
                           << ", value " << value;
      return got == want;
    };
    std::vector<double> values;
    for (std::uint64_t bits = 0; bits < patterns; ++bits) {
      const double want = decodeFloatByLayout(*format, bits), got = decodeFloat(*format, bits);
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << bits;
        continue;
      }
      ASSERT_EQ(got, want) << bits;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << bits;
      if (!std::isinf(want)) values.push_back(want);
    }
    std::sort(values.begin(), values.end());
    const double largest = values.back();
    const double step = largest - values[values.size() - 2];
    std::vector<double> probes = {NAN,
                                  INFINITY,
                                  -INFINITY,
                                  0.0,
                                  -0.0,
                                  largest + step / 2,
                                  -largest - step / 2,
                                  largest + step,
                                  largest * 4,
                                  1e300,
                                  std::ldexp(1.0, -1070)};
    for (std::size_t i = 0; i < values.size(); ++i) {
      probes.push_back(values[i]);
      if (i + 1 == values.size()) break;
      const double midpoint = (values[i] + values[i + 1]) / 2;
      probes.push_back(midpoint);
      probes.push_back(std::nextafter(midpoint, -INFINITY));
      probes.push_back(std::nextafter(midpoint, INFINITY));
    }
    for (double around : {largest + step / 2, std::ldexp(1.0, -30)}) {
      probes.push_back(std::nextafter(around, 0.0));
      probes.push_back(std::nextafter(around, INFINITY));
    }
    for (int i = 0; i < 100000; ++i) {
      // Random doubles from a little past the largest value down to far below the smallest.
      const double unit = static_cast<double>(random() >> 11) / 9007199254740992.0;
      const int exponent = static_cast<int>(random() % 64) - 48;
      probes.push_back((random() & 1 ? -1 : 1) * std::ldexp(unit, exponent) *
                       (largest / std::ldexp(1.0, 15)));
    }
    int wrong = 0;
    for (double value : probes) wrong += same(value) ? 0 : 1;
    ASSERT_EQ(wrong, 0);
  }
}

TEST(ElementCodec, ElementsStoreAndLoad) {
  alignas(8) unsigned char buffer[64];
  for (const braid::DataType& type : braid::kDataTypes) {
    std::memset(buffer, 0, sizeof(buffer));
    storeElement(buffer, 3, type.type, type.isSigned ? -5.0 : 5.0);
    EXPECT_EQ(loadElement(buffer, 3, type.type), type.isSigned ? -5.0 : 5.0) << type.name;
    EXPECT_EQ(loadElement(buffer, 2, type.type), 0.0) << type.name;
  }
  EXPECT_EQ(unitInLastPlace(ncclFloat16, 1000.0), 0.5);
  EXPECT_EQ(unitInLastPlace(ncclFloat8e5m2, 6.0), 1.0);
  EXPECT_EQ(unitInLastPlace(ncclInt32, 7.0), 1.0);
}

TEST(ElementCodec, WideFormatsMatchTheHardware) {
  // The same layout code covers float and double: it must agree with the C++ conversions.
  const FloatFormat& f32 = braid::dataType(ncclFloat32).format;
  const FloatFormat& f64 = braid::dataType(ncclFloat64).format;
  for (double v : {1.0, -0.1, 3.0e38, 1.0e-40, 123456.789, 0.0}) {
    float f = static_cast<float>(v);
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    EXPECT_EQ(encodeFloat(f32, v), bits) << v;
    EXPECT_EQ(encodeFloatByLayout(f32, v), bits) << v;
    EXPECT_EQ(decodeFloatByLayout(f32, bits), static_cast<double>(f)) << v;
    EXPECT_EQ(decodeFloat(f32, bits), static_cast<double>(f)) << v;
    std::uint64_t wide;
    std::memcpy(&wide, &v, 8);
    EXPECT_EQ(encodeFloat(f64, v), wide) << v;
    EXPECT_EQ(decodeFloat(f64, wide), v) << v;
    EXPECT_EQ(encodeFloatByLayout(f64, v), wide) << v;
    EXPECT_EQ(decodeFloatByLayout(f64, wide), v) << v;
  }
  EXPECT_EQ(roundToType(ncclFloat16, 2049.0), 2048.0);
  EXPECT_EQ(roundToType(ncclInt8, -5.0), -5.0);
}

}  // namespace
}  // namespace braid::verifiable
