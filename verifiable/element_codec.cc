#include "verifiable/element_codec.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "verifiable/narrow_format_table.h"

namespace braid::verifiable {

namespace {

// float and double: the hardware converts (also nearest-even), much faster than the layout code
// below in the oracle's per-element loops; NaN still gets the canonical pattern.
bool isBinary32(const FloatFormat& f) {
  return f.exponentBits == 8 && f.mantissaBits == 23;
}
bool isBinary64(const FloatFormat& f) {
  return f.exponentBits == 11 && f.mantissaBits == 52;
}

}  // namespace

std::uint64_t encodeFloat(const FloatFormat& format, double value) {
  if (!std::isnan(value)) {
    if (isBinary64(format)) return std::bit_cast<std::uint64_t>(value);
    if (isBinary32(format)) return std::bit_cast<std::uint32_t>(static_cast<float>(value));
  }
  if (const NarrowFormatTable* table = NarrowFormatTable::of(format)) return table->encode(value);
  return encodeFloatByLayout(format, value);
}

double decodeFloat(const FloatFormat& format, std::uint64_t bits) {
  if (isBinary64(format)) return std::bit_cast<double>(bits);
  if (isBinary32(format)) return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
  if (const NarrowFormatTable* table = NarrowFormatTable::of(format)) return table->decode(bits);
  return decodeFloatByLayout(format, bits);
}

std::uint64_t encodeFloatByLayout(const FloatFormat& format, double value) {
  const int m = format.mantissaBits;
  const std::uint64_t one = 1;
  const std::uint64_t signBit = one << (format.exponentBits + m);
  const std::uint64_t maxExponentField = (one << format.exponentBits) - 1;
  const std::uint64_t nanBits = format.hasInfinity ? ((maxExponentField << m) | (one << (m - 1)))
                                                   : ((maxExponentField << m) | ((one << m) - 1));
  if (std::isnan(value)) return nanBits;
  std::uint64_t sign = std::signbit(value) ? signBit : 0;
  double magnitude = std::fabs(value);
  if (magnitude == 0) return sign;
  // Largest finite value: with infinity the top exponent is reserved; e4m3fn only loses the
  // all-ones mantissa of its top exponent (NaN).
  std::uint64_t maxFinite = format.hasInfinity ? (((maxExponentField - 1) << m) | ((one << m) - 1))
                                               : ((maxExponentField << m) | ((one << m) - 2));
  const int minNormalExponent = 1 - format.bias;
  int exponent = std::ilogb(magnitude);
  std::uint64_t bits;
  if (exponent < minNormalExponent) {
    // Subnormal: the combined exponent|mantissa field counts quanta of 2^(emin - m); rounding
    // up into the first normal value carries into the exponent field by itself.
    bits = static_cast<std::uint64_t>(std::nearbyint(std::ldexp(magnitude, m - minNormalExponent)));
  } else {
    double scaled = std::nearbyint(std::ldexp(magnitude, m - exponent));  // in [2^m, 2^(m+1)]
    if (scaled >= std::ldexp(1.0, m + 1)) {
      scaled /= 2;
      ++exponent;
    }
    long exponentField = exponent + format.bias;
    if (exponentField > static_cast<long>(maxExponentField)) return sign | (maxFinite + 1);
    bits = (static_cast<std::uint64_t>(exponentField) << m) |
           (static_cast<std::uint64_t>(scaled) - (one << m));
  }
  if (bits > maxFinite) {
    // Overflow: infinity where it exists, else the NaN pattern (conversion without saturation).
    return format.hasInfinity ? (sign | (maxExponentField << m)) : (sign | nanBits);
  }
  return sign | bits;
}

double decodeFloatByLayout(const FloatFormat& format, std::uint64_t bits) {
  const int m = format.mantissaBits;
  const std::uint64_t one = 1;
  const std::uint64_t maxExponentField = (one << format.exponentBits) - 1;
  bool negative = (bits >> (format.exponentBits + m)) & 1;
  std::uint64_t exponentField = (bits >> m) & maxExponentField;
  std::uint64_t mantissa = bits & ((one << m) - 1);
  double magnitude;
  if (format.hasInfinity && exponentField == maxExponentField) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else if (!format.hasInfinity && exponentField == maxExponentField &&
             mantissa == (one << m) - 1) {
    magnitude = NAN;
  } else if (exponentField == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - format.bias - m);
  } else {
    magnitude = std::ldexp(static_cast<double>(mantissa | (one << m)),
                           static_cast<int>(exponentField) - format.bias - m);
  }
  return negative ? -magnitude : magnitude;
}

namespace {

template <typename T>
void storeAs(void* base, std::size_t index, T value) {
  std::memcpy(static_cast<char*>(base) + index * sizeof(T), &value, sizeof(T));
}

template <typename T>
T loadAs(const void* base, std::size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(base) + index * sizeof(T), sizeof(T));
  return value;
}

// The formats C++ has no arithmetic for (fp16, bf16, fp8); nullptr for the others.
const FloatFormat* narrowFormat(ncclDataType_t type) {
  const braid::DataType& info = braid::dataType(type);
  return info.isFloat && info.size <= 2 ? &info.format : nullptr;
}

}  // namespace

double unitInLastPlace(ncclDataType_t type, double value) {
  const braid::DataType& info = braid::dataType(type);
  if (!info.isFloat) return 1;
  const FloatFormat& format = info.format;
  int exponent = value == 0 ? 1 - format.bias : std::max(std::ilogb(value), 1 - format.bias);
  return std::ldexp(1.0, exponent - format.mantissaBits);
}

void storeElement(void* base, std::size_t index, ncclDataType_t type, double value) {
  switch (type) {
    case ncclInt8:
      storeAs<std::int8_t>(base, index, static_cast<std::int8_t>(value));
      break;
    case ncclUint8:
      storeAs<std::uint8_t>(base, index, static_cast<std::uint8_t>(value));
      break;
    case ncclInt32:
      storeAs<std::int32_t>(base, index, static_cast<std::int32_t>(value));
      break;
    case ncclUint32:
      storeAs<std::uint32_t>(base, index, static_cast<std::uint32_t>(value));
      break;
    case ncclInt64:
      storeAs<std::int64_t>(base, index, static_cast<std::int64_t>(value));
      break;
    case ncclUint64:
      storeAs<std::uint64_t>(base, index, static_cast<std::uint64_t>(value));
      break;
    case ncclFloat32:
      storeAs<float>(base, index, static_cast<float>(value));
      break;
    case ncclFloat64:
      storeAs<double>(base, index, value);
      break;
    case ncclFloat16:
    case ncclBfloat16:
      storeAs<std::uint16_t>(base, index,
                             static_cast<std::uint16_t>(encodeFloat(*narrowFormat(type), value)));
      break;
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      storeAs<std::uint8_t>(base, index,
                            static_cast<std::uint8_t>(encodeFloat(*narrowFormat(type), value)));
      break;
    default:
      break;
  }
}

double loadElement(const void* base, std::size_t index, ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return loadAs<std::int8_t>(base, index);
    case ncclUint8:
      return loadAs<std::uint8_t>(base, index);
    case ncclInt32:
      return loadAs<std::int32_t>(base, index);
    case ncclUint32:
      return loadAs<std::uint32_t>(base, index);
    case ncclInt64:
      return static_cast<double>(loadAs<std::int64_t>(base, index));
    case ncclUint64:
      return static_cast<double>(loadAs<std::uint64_t>(base, index));
    case ncclFloat32:
      return loadAs<float>(base, index);
    case ncclFloat64:
      return loadAs<double>(base, index);
    case ncclFloat16:
    case ncclBfloat16:
      return decodeFloat(*narrowFormat(type), loadAs<std::uint16_t>(base, index));
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return decodeFloat(*narrowFormat(type), loadAs<std::uint8_t>(base, index));
    default:
      return NAN;
  }
}

double roundToNarrowOrInteger(ncclDataType_t type, double value) {
  alignas(8) unsigned char element[8];
  storeElement(element, 0, type, value);
  return loadElement(element, 0, type);
}

}  // namespace braid::verifiable
