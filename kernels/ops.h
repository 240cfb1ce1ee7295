// Element-wise reduction semantics, defined once for the CPU and CUDA kernels.
//
// Everything here is a small inline function usable on host and device (no host-only library
// calls): the scalar conversions of the narrow float formats, the four base operations, and the
// pre-multiply / post-divide steps. The CPU kernels vectorise loops over these definitions; the
// SIMD conversion routines in kernels/cpu/ must give bit-identical results (the tests check it).
//
// Semantics:
// - fp16, bf16, fp8 e4m3 and fp8 e5m2 are widened to float, computed in float and rounded back
//   once per result (round to nearest, ties to even). fp32 computes in float, fp64 in double.
// - Integer sum and prod wrap modulo 2^bits; the arithmetic is done on unsigned types (no UB).
// - max/min follow IEEE 754-2019 maximumNumber/minimumNumber, the behaviour of fmaxf/fminf and
//   of NCCL (fmaxf, __hmax): a NaN operand is ignored, the result is NaN only when both operands
//   are NaN. Zeros order as -0 < +0, so max/min are commutative to the bit.
// - preMul: local * scalar, rounded to the element type, then the base operation.
// - postDiv: integers divide truncating toward zero, floats divide in their compute type
//   (float, or double for fp64) and round once.
// - fp8 conversions saturate to the largest finite value on overflow, including +-inf, like
//   CUDA's __nv_fp8_e4m3 / __nv_fp8_e5m2 constructors (__NV_SATFINITE); a NaN becomes 0x7F.
//   Floating-point results assume the default rounding mode and no flush-to-zero.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define BRAID_HOST_DEVICE __host__ __device__
#define BRAID_INLINE __forceinline__
#else
#define BRAID_HOST_DEVICE
// Forced inlining matters on the CPU: each ISA variant is a separate translation unit compiled
// with its own -m flags, and an out-of-line copy of these functions would be a shared symbol the
// linker could pick from the AVX-512 unit for every caller.
#define BRAID_INLINE inline __attribute__((always_inline))
#endif

namespace braid::kernels {

/// ncclDataType_t values (kept here so the kernels do not depend on the public header).
namespace dtype {
inline constexpr int kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5,
                     kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9, kFp8E4M3 = 10,
                     kFp8E5M2 = 11, kCount = 12;
}  // namespace dtype

// ---- Bit casts -------------------------------------------------------------------------------

BRAID_HOST_DEVICE BRAID_INLINE std::uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

BRAID_HOST_DEVICE BRAID_INLINE float bitsToFloat(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

BRAID_HOST_DEVICE BRAID_INLINE std::uint64_t doubleBits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::uint64_t>(__double_as_longlong(d));
#else
  std::uint64_t u;
  __builtin_memcpy(&u, &d, sizeof(u));
  return u;
#endif
}

BRAID_HOST_DEVICE BRAID_INLINE double bitsToDouble(std::uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  __builtin_memcpy(&d, &u, sizeof(d));
  return d;
#endif
}

// ---- Narrow float formats <-> float ----------------------------------------------------------
// Written branch-free where it matters so compilers vectorise them. NaN payloads follow x86's
// F16C (vcvtph2ps/vcvtps2ph) so the scalar and SIMD paths agree to the bit.

/// IEEE binary16 -> float (exact). A NaN keeps its payload and becomes quiet.
BRAID_HOST_DEVICE BRAID_INLINE float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t magnitude = h & 0x7FFFu;
  // All three candidates are computed and one selected, so loops over this vectorise.
  const std::uint32_t quiet = magnitude > 0x7C00u ? 0x00400000u : 0u;
  const std::uint32_t special = 0x7F800000u | quiet | ((magnitude & 0x3FFu) << 13);
  const std::uint32_t normal = (magnitude << 13) + ((127u - 15u) << 23);  // rebias 15 -> 127
  // Zero or subnormal: magnitude * 2^-24 is exact in float.
  const std::uint32_t subnormal =
      floatBits(static_cast<float>(static_cast<std::int32_t>(magnitude)) * 0x1p-24f);
  const std::uint32_t bits =
      magnitude >= 0x7C00u ? special : (magnitude >= 0x0400u ? normal : subnormal);
  return bitsToFloat(sign | bits);
}

/// float -> IEEE binary16, round to nearest even; overflow gives inf; NaN stays NaN (quiet,
/// top payload bits kept).
BRAID_HOST_DEVICE BRAID_INLINE std::uint16_t floatToHalf(float f) {
  const std::uint32_t x = floatBits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t a = x & 0x7FFFFFFFu;
  std::uint32_t h;
  if (a > 0x7F800000u) {
    h = 0x7E00u | ((a >> 13) & 0x3FFu);
  } else if (a >= 0x477FF000u) {  // >= 65520 = max half + half an ulp: rounds to inf
    h = 0x7C00u;
  } else if (a < 0x38800000u) {  // below 2^-14: subnormal half. Adding 0.5 (ulp 2^-24) lets
                                 // the FPU round to the subnormal quantum, ties to even.
    h = floatBits(bitsToFloat(a) + 0.5f) - 0x3F000000u;
  } else {  // normal: rebias and round the 13 dropped bits to nearest even
    h = (a - ((127u - 15u) << 23) + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
  }
  return static_cast<std::uint16_t>(sign | h);
}

/// bfloat16 -> float (exact).
BRAID_HOST_DEVICE BRAID_INLINE float bf16ToFloat(std::uint16_t b) {
  return bitsToFloat(static_cast<std::uint32_t>(b) << 16);
}

/// float -> bfloat16, round to nearest even (subnormals included); NaN becomes quiet.
BRAID_HOST_DEVICE BRAID_INLINE std::uint16_t floatToBf16(float f) {
  const std::uint32_t x = floatBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  return static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

/// fp8 layouts: kMantissaBits explicit mantissa bits, kBias exponent bias, kMaxCode the
/// largest finite magnitude code.
struct Fp8E4M3Format {
  static constexpr std::uint32_t kMantissaBits = 3, kBias = 7, kMaxCode = 0x7E;
};
struct Fp8E5M2Format {
  static constexpr std::uint32_t kMantissaBits = 2, kBias = 15, kMaxCode = 0x7B;
};

/// float -> fp8, round to nearest even, saturating to +-max finite (__NV_SATFINITE); NaN -> 0x7F.
template <class Format>
BRAID_HOST_DEVICE BRAID_INLINE std::uint8_t floatToFp8(float f) {
  constexpr std::uint32_t kDropped = 23 - Format::kMantissaBits;
  constexpr std::uint32_t kMinNormal = (127 + 1 - Format::kBias) << 23;
  // A float whose ulp is the fp8 subnormal quantum 2^(1 - bias - mantissa bits).
  constexpr std::uint32_t kSubnormalMagic = (127 + 1 - Format::kBias - Format::kMantissaBits + 23)
                                            << 23;
  const std::uint32_t x = floatBits(f);
  const std::uint32_t sign = (x >> 24) & 0x80u;
  const std::uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7F;
  std::uint32_t code;
  if (a < kMinNormal) {
    const float magic = bitsToFloat(kSubnormalMagic);
    code = floatBits(bitsToFloat(a) + magic) - kSubnormalMagic;
  } else {
    code = (a - ((127 - Format::kBias) << 23) + ((1u << (kDropped - 1)) - 1) +
            ((a >> kDropped) & 1u)) >>
           kDropped;
    if (code > Format::kMaxCode) code = Format::kMaxCode;
  }
  return static_cast<std::uint8_t>(sign | code);
}

/// fp8 e5m2 -> float (exact): e5m2 is the upper byte of a binary16.
BRAID_HOST_DEVICE BRAID_INLINE float fp8E5M2ToFloat(std::uint8_t b) {
  return halfToFloat(static_cast<std::uint16_t>(b << 8));
}

/// fp8 e4m3 -> float (exact); the NaN codes 0x7F/0xFF give the positive quiet NaN 0x7FC00000.
BRAID_HOST_DEVICE BRAID_INLINE float fp8E4M3ToFloat(std::uint8_t b) {
  const std::uint32_t sign = static_cast<std::uint32_t>(b & 0x80u) << 24;
  const std::uint32_t magnitude = b & 0x7Fu;
  const std::uint32_t normal = (magnitude << 20) + ((127u - 7u) << 23);  // rebias 7 -> 127
  // Zero or subnormal: magnitude * 2^-9 is exact in float.
  const std::uint32_t subnormal =
      floatBits(static_cast<float>(static_cast<std::int32_t>(magnitude)) * 0x1p-9f);
  const std::uint32_t bits = sign | (magnitude >= 0x08u ? normal : subnormal);
  return bitsToFloat(magnitude == 0x7Fu ? 0x7FC00000u : bits);
}

// ---- Element types ---------------------------------------------------------------------------

/// Storage and compute types of an element type, and the conversions between them.
/// Narrow floats are stored as raw bits and computed in float.
template <int D>
struct ElementType;

template <class T>
struct NativeElement {
  using Storage = T;
  using Compute = T;
  BRAID_HOST_DEVICE BRAID_INLINE static Compute load(Storage s) { return s; }
  BRAID_HOST_DEVICE BRAID_INLINE static Storage store(Compute c) { return c; }
};
template <>
struct ElementType<dtype::kInt8> : NativeElement<std::int8_t> {};
template <>
struct ElementType<dtype::kUint8> : NativeElement<std::uint8_t> {};
template <>
struct ElementType<dtype::kInt32> : NativeElement<std::int32_t> {};
template <>
struct ElementType<dtype::kUint32> : NativeElement<std::uint32_t> {};
template <>
struct ElementType<dtype::kInt64> : NativeElement<std::int64_t> {};
template <>
struct ElementType<dtype::kUint64> : NativeElement<std::uint64_t> {};
template <>
struct ElementType<dtype::kFloat32> : NativeElement<float> {};
template <>
struct ElementType<dtype::kFloat64> : NativeElement<double> {};

#define BRAID_NARROW_FLOAT_ELEMENT(D, StorageType, LoadFn, StoreFn)                       \
  template <>                                                                             \
  struct ElementType<D> {                                                                 \
    using Storage = StorageType;                                                          \
    using Compute = float;                                                                \
    BRAID_HOST_DEVICE BRAID_INLINE static Compute load(Storage s) { return LoadFn(s); }   \
    BRAID_HOST_DEVICE BRAID_INLINE static Storage store(Compute c) { return StoreFn(c); } \
  };
BRAID_NARROW_FLOAT_ELEMENT(dtype::kFloat16, std::uint16_t, halfToFloat, floatToHalf)
BRAID_NARROW_FLOAT_ELEMENT(dtype::kBfloat16, std::uint16_t, bf16ToFloat, floatToBf16)
BRAID_NARROW_FLOAT_ELEMENT(dtype::kFp8E4M3, std::uint8_t, fp8E4M3ToFloat, floatToFp8<Fp8E4M3Format>)
BRAID_NARROW_FLOAT_ELEMENT(dtype::kFp8E5M2, std::uint8_t, fp8E5M2ToFloat, floatToFp8<Fp8E5M2Format>)
#undef BRAID_NARROW_FLOAT_ELEMENT

// ---- Base operations -------------------------------------------------------------------------

/// Unsigned type wide enough to hold T's bits without promotion to int (wrapping arithmetic).
template <class T>
struct WrapType {
  using type = unsigned int;
};
template <>
struct WrapType<std::int64_t> {
  using type = unsigned long long;
};
template <>
struct WrapType<std::uint64_t> {
  using type = unsigned long long;
};

template <class T>
BRAID_HOST_DEVICE BRAID_INLINE T wrapAdd(T a, T b) {
  using W = typename WrapType<T>::type;
  return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
}
BRAID_HOST_DEVICE BRAID_INLINE float wrapAdd(float a, float b) {
  return a + b;
}
BRAID_HOST_DEVICE BRAID_INLINE double wrapAdd(double a, double b) {
  return a + b;
}

template <class T>
BRAID_HOST_DEVICE BRAID_INLINE T wrapMul(T a, T b) {
  using W = typename WrapType<T>::type;
  return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
}
BRAID_HOST_DEVICE BRAID_INLINE float wrapMul(float a, float b) {
  return a * b;
}
BRAID_HOST_DEVICE BRAID_INLINE double wrapMul(double a, double b) {
  return a * b;
}

/// Bitwise and/or of two equal floats: picks +0 (and) or -0 (or) from a pair of zeros.
BRAID_HOST_DEVICE BRAID_INLINE float andBits(float a, float b) {
  return bitsToFloat(floatBits(a) & floatBits(b));
}
BRAID_HOST_DEVICE BRAID_INLINE float orBits(float a, float b) {
  return bitsToFloat(floatBits(a) | floatBits(b));
}
BRAID_HOST_DEVICE BRAID_INLINE double andBits(double a, double b) {
  return bitsToDouble(doubleBits(a) & doubleBits(b));
}
BRAID_HOST_DEVICE BRAID_INLINE double orBits(double a, double b) {
  return bitsToDouble(doubleBits(a) | doubleBits(b));
}

struct SumOp {
  template <class T>
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T a, T b) const {
    return wrapAdd(a, b);
  }
};

struct ProdOp {
  template <class T>
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T a, T b) const {
    return wrapMul(a, b);
  }
};

struct MaxOp {
  template <class T>
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T a, T b) const {
    return a > b ? a : b;
  }
  // Written as selects so loops vectorise: a NaN b loses to a, equal values (the zero pair
  // included) combine their bits so +0 wins.
  BRAID_HOST_DEVICE BRAID_INLINE float operator()(float a, float b) const { return pick(a, b); }
  BRAID_HOST_DEVICE BRAID_INLINE double operator()(double a, double b) const { return pick(a, b); }

 private:
  template <class F>
  BRAID_HOST_DEVICE BRAID_INLINE static F pick(F a, F b) {
    const F larger = (a > b || b != b) ? a : b;
    return a == b ? andBits(a, b) : larger;
  }
};

struct MinOp {
  template <class T>
  BRAID_HOST_DEVICE BRAID_INLINE T operator()(T a, T b) const {
    return a < b ? a : b;
  }
  BRAID_HOST_DEVICE BRAID_INLINE float operator()(float a, float b) const { return pick(a, b); }
  BRAID_HOST_DEVICE BRAID_INLINE double operator()(double a, double b) const { return pick(a, b); }

 private:
  template <class F>
  BRAID_HOST_DEVICE BRAID_INLINE static F pick(F a, F b) {
    const F smaller = (a < b || b != b) ? a : b;
    return a == b ? orBits(a, b) : smaller;
  }
};

// ---- Pre-multiply and post-divide ------------------------------------------------------------

/// local * scalar in the compute type, rounded to the element type.
template <class E>
BRAID_HOST_DEVICE BRAID_INLINE typename E::Compute preMultiply(typename E::Compute local,
                                                               typename E::Compute scalar) {
  return E::load(E::store(wrapMul(local, scalar)));
}

/// Division of a reduced value by the rank count (ncclAvg). Integers truncate toward zero;
/// the 64-bit signed division cannot overflow since divisor >= 2.
template <class T>
BRAID_HOST_DEVICE BRAID_INLINE T postDivide(T value, std::uint32_t divisor) {
  if constexpr (std::is_signed_v<T>) {
    return static_cast<T>(static_cast<long long>(value) / static_cast<long long>(divisor));
  } else {
    return static_cast<T>(static_cast<unsigned long long>(value) / divisor);
  }
}
BRAID_HOST_DEVICE BRAID_INLINE float postDivide(float value, std::uint32_t divisor) {
  return value / static_cast<float>(divisor);
}
BRAID_HOST_DEVICE BRAID_INLINE double postDivide(double value, std::uint32_t divisor) {
  return value / static_cast<double>(divisor);
}

}  // namespace braid::kernels
