#include "gradsync/element_ops.h"

#include <bit>
#include <cstring>

#include "braid/datatypes.h"

namespace braid::gradsync {

bool isGradientType(ncclDataType_t dtype) {
  return dtype == ncclFloat16 || dtype == ncclBfloat16 || dtype == ncclFloat32 ||
         dtype == ncclFloat64;
}

size_t elementSize(ncclDataType_t dtype) {
  const braid::DataType* type = braid::findDataType(dtype);
  return type ? type->size : 0;
}

std::string dtypeName(ncclDataType_t dtype) {
  const braid::DataType* type = braid::findDataType(dtype);
  return type ? type->name : "dtype(" + std::to_string(static_cast<int>(dtype)) + ")";
}

// fp32 -> fp16 with round to nearest even, without branches on the data in the common case
// (F. Giesen's float_to_half_fast3_rtne): subnormal results come from one float addition that
// lets the FPU do the rounding; normal results round by adding 0xfff plus the kept LSB.
uint16_t floatToHalf(float value) {
  constexpr uint32_t kF32Infinity = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;  // 2^16: rounds to infinity in fp16
  constexpr uint32_t kSmallestNormal = 113u << 23;       // 2^-14
  const float denormMagic = std::bit_cast<float>(((127u - 15u) + (23u - 10u) + 1u) << 23);
  uint32_t x = std::bit_cast<uint32_t>(value);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t out;
  if (x >= kF16Overflow) {
    out = x > kF32Infinity ? 0x7e00 : 0x7c00;  // NaN stays a (quiet) NaN, the rest overflow
  } else if (x < kSmallestNormal) {
    const float shifted = std::bit_cast<float>(x) + denormMagic;
    out = static_cast<uint16_t>(std::bit_cast<uint32_t>(shifted) -
                                std::bit_cast<uint32_t>(denormMagic));
  } else {
    const uint32_t mantissaOdd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu;  // rebias (wraps) and round
    x += mantissaOdd;
    out = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

float halfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in fp32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t floatToBfloat16(float value) {
  const uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t keptLsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + keptLsb) >> 16);
}

float bfloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

namespace {

template <typename T>
void addInPlace(void* destination, const void* source, size_t count) {
  T* d = static_cast<T*>(destination);
  const T* s = static_cast<const T*>(source);
  for (size_t i = 0; i < count; i++) d[i] += s[i];
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void addNarrowInPlace(void* destination, const void* source, size_t count) {
  uint16_t* d = static_cast<uint16_t*>(destination);
  const uint16_t* s = static_cast<const uint16_t*>(source);
  for (size_t i = 0; i < count; i++) d[i] = Narrow(Widen(d[i]) + Widen(s[i]));
}

template <typename T>
T load(const void* data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(data) + index * sizeof(T), sizeof(T));
  return value;
}

}  // namespace

void accumulate(void* destination, const void* source, size_t count, ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat32:
      return addInPlace<float>(destination, source, count);
    case ncclFloat64:
      return addInPlace<double>(destination, source, count);
    case ncclFloat16:
      return addNarrowInPlace<halfToFloat, floatToHalf>(destination, source, count);
    case ncclBfloat16:
      return addNarrowInPlace<bfloat16ToFloat, floatToBfloat16>(destination, source, count);
    default:
      return;  // only gradient types are ever accumulated (checked at registration)
  }
}

double elementAsDouble(const void* data, size_t index, ncclDataType_t dtype) {
  switch (dtype) {
    case ncclInt8:
      return load<int8_t>(data, index);
    case ncclUint8:
      return load<uint8_t>(data, index);
    case ncclInt32:
      return load<int32_t>(data, index);
    case ncclUint32:
      return load<uint32_t>(data, index);
    case ncclInt64:
      return static_cast<double>(load<int64_t>(data, index));
    case ncclUint64:
      return static_cast<double>(load<uint64_t>(data, index));
    case ncclFloat16:
      return halfToFloat(load<uint16_t>(data, index));
    case ncclBfloat16:
      return bfloat16ToFloat(load<uint16_t>(data, index));
    case ncclFloat32:
      return load<float>(data, index);
    case ncclFloat64:
      return load<double>(data, index);
    default:
      return static_cast<double>(load<uint8_t>(data, index));  // fp8: raw code
  }
}

}  // namespace braid::gradsync
