// The element codecs of every type against known encodings: half, bfloat16 and fp8 bit by bit,
// float and double against the C++ conversions.
#include "verifiable/element_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

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
    EXPECT_EQ(decodeFloat(f32, bits), static_cast<double>(f)) << v;
    std::uint64_t wide;
    std::memcpy(&wide, &v, 8);
    EXPECT_EQ(encodeFloat(f64, v), wide) << v;
    EXPECT_EQ(decodeFloat(f64, wide), v) << v;
  }
  EXPECT_EQ(roundToType(ncclFloat16, 2049.0), 2048.0);
  EXPECT_EQ(roundToType(ncclInt8, -5.0), -5.0);
}

}  // namespace
}  // namespace braid::verifiable
