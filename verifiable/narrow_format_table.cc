#include "verifiable/narrow_format_table.h"

#include <bit>
#include <cmath>

#include "verifiable/element_codec.h"

namespace braid::verifiable {
namespace {

bool sameFormat(const FloatFormat& a, const FloatFormat& b) {
  return a.exponentBits == b.exponentBits && a.mantissaBits == b.mantissaBits && a.bias == b.bias &&
         a.hasInfinity == b.hasInfinity;
}

// The table of `type`, if format is that type's.
template <ncclDataType_t type>
const NarrowFormatTable* tableOf(const FloatFormat& format) {
  static const NarrowFormatTable table(braid::dataType(type).format);
  return sameFormat(format, braid::dataType(type).format) ? &table : nullptr;
}

}  // namespace

NarrowFormatTable::NarrowFormatTable(const FloatFormat& format) {
  const int m = format.mantissaBits;
  const std::uint64_t one = 1;
  const int width = 1 + format.exponentBits + m;
  widthMask_ = (one << width) - 1;
  signBit_ = one << (width - 1);
  const std::uint64_t maxExponentField = (one << format.exponentBits) - 1;
  // With infinity the top exponent is reserved; e4m3fn only loses the all-ones mantissa of its
  // top exponent (NaN), and overflows to it (conversion without saturation).
  maxFinite_ = format.hasInfinity ? (((maxExponentField - 1) << m) | ((one << m) - 1))
                                  : ((maxExponentField << m) | ((one << m) - 2));
  nan_ = format.hasInfinity ? ((maxExponentField << m) | (one << (m - 1)))
                            : ((maxExponentField << m) | ((one << m) - 1));
  overflow_ = format.hasInfinity ? (maxExponentField << m) : nan_;
  mantissaBits_ = m;
  minNormalExponent_ = 1 - format.bias;
  subnormalsPerUnit_ = std::ldexp(1.0, m - minNormalExponent_);
  values_.resize(widthMask_ + 1);
  for (std::uint64_t bits = 0; bits <= widthMask_; ++bits)
    values_[bits] = decodeFloatByLayout(format, bits);
}

const NarrowFormatTable* NarrowFormatTable::of(const FloatFormat& format) {
  // One table per type, built by its first caller (thread-safe static initialisation).
  switch (format.exponentBits * 64 + format.mantissaBits) {
    case 5 * 64 + 10:
      return tableOf<ncclFloat16>(format);
    case 8 * 64 + 7:
      return tableOf<ncclBfloat16>(format);
    case 4 * 64 + 3:
      return tableOf<ncclFloat8e4m3>(format);
    case 5 * 64 + 2:
      return tableOf<ncclFloat8e5m2>(format);
    default:
      return nullptr;
  }
}

std::uint64_t NarrowFormatTable::encode(double value) const {
  if (std::isnan(value)) return nan_;
  const std::uint64_t sign = std::signbit(value) ? signBit_ : 0;
  const double magnitude = std::fabs(value);
  const double largest = values_[maxFinite_];
  if (magnitude > largest) {
    const double midpoint = largest + (largest - values_[maxFinite_ - 1]) / 2;
    // A tie goes to the even pattern of the two: maxFinite_ itself or the overflow.
    const bool overflows = magnitude > midpoint || (magnitude == midpoint && (maxFinite_ & 1) != 0);
    return sign | (overflows ? overflow_ : maxFinite_);
  }
  // The pattern at or below magnitude: its exponent and top mantissa bits (normal), or how many
  // of the smallest subnormal it holds; then the nearer of it and the next, by the midpoint of
  // their values (exact in double: both have a few significant bits).
  const auto bits = std::bit_cast<std::uint64_t>(magnitude);
  const int exponent = static_cast<int>(bits >> 52) - 1023;
  std::uint64_t below;
  if (exponent >= minNormalExponent_) {
    below = (static_cast<std::uint64_t>(exponent - minNormalExponent_ + 1) << mantissaBits_) |
            ((bits & ((std::uint64_t{1} << 52) - 1)) >> (52 - mantissaBits_));
  } else {
    below = static_cast<std::uint64_t>(magnitude * subnormalsPerUnit_);
  }
  if (values_[below] == magnitude) return sign | below;
  const double midpoint = (values_[below] + values_[below + 1]) / 2;
  const bool up = magnitude > midpoint || (magnitude == midpoint && (below & 1) != 0);
  return sign | (up ? below + 1 : below);
}

}  // namespace braid::verifiable
