// Array conversions for the fp16/bf16 wire. They run on the stream thread before and after each
// bucket's allreduce, over every byte of the bucket, so they must keep up with memory: branch-free
// loops the compiler vectorises, and on x86 with F16C the hardware's fp16 conversions (round to
// nearest even, like floatToHalf), chosen at run time (the library is never built for one CPU).
#include <cstring>

#include "gradsync/element_ops.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define BRAID_GRADSYNC_X86 1
#endif

namespace braid::gradsync {

namespace {

inline uint16_t bfloat16Bits(uint32_t x) {
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const uint32_t quietNan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
}

void narrowBfloat16(const float* source, uint16_t* wire, size_t count) {
  for (size_t i = 0; i < count; i++) {
    uint32_t x;
    std::memcpy(&x, source + i, sizeof(x));
    wire[i] = bfloat16Bits(x);
  }
}

void widenBfloat16(const uint16_t* wire, float* destination, size_t count) {
  for (size_t i = 0; i < count; i++) {
    const uint32_t x = static_cast<uint32_t>(wire[i]) << 16;
    std::memcpy(destination + i, &x, sizeof(x));
  }
}

#ifdef BRAID_GRADSYNC_X86
__attribute__((target("avx2"))) void narrowBfloat16Avx2(const float* source, uint16_t* wire,
                                                        size_t count) {
  for (size_t i = 0; i < count; i++) {
    uint32_t x;
    std::memcpy(&x, source + i, sizeof(x));
    wire[i] = bfloat16Bits(x);
  }
}

__attribute__((target("avx2"))) void widenBfloat16Avx2(const uint16_t* wire, float* destination,
                                                       size_t count) {
  for (size_t i = 0; i < count; i++) {
    const uint32_t x = static_cast<uint32_t>(wire[i]) << 16;
    std::memcpy(destination + i, &x, sizeof(x));
  }
}

__attribute__((target("avx2,f16c"))) void narrowHalfF16c(const float* source, uint16_t* wire,
                                                         size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(source + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(wire + i), h);
  }
  for (; i < count; i++) wire[i] = floatToHalf(source[i]);
}

__attribute__((target("avx2,f16c"))) void widenHalfF16c(const uint16_t* wire, float* destination,
                                                        size_t count) {
  size_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wire + i));
    _mm256_storeu_ps(destination + i, _mm256_cvtph_ps(h));
  }
  for (; i < count; i++) destination[i] = halfToFloat(wire[i]);
}

struct Cpu {
  bool avx2 = __builtin_cpu_supports("avx2");
  bool f16c = avx2;  // every CPU with AVX2 has F16C (and not every compiler can ask for it)
};
const Cpu& cpu() {
  static const Cpu features;
  return features;
}
#endif

}  // namespace

void narrowFloats(const float* source, uint16_t* wire, size_t count, ncclDataType_t wireType) {
  if (wireType == ncclBfloat16) {
#ifdef BRAID_GRADSYNC_X86
    if (cpu().avx2) return narrowBfloat16Avx2(source, wire, count);
#endif
    return narrowBfloat16(source, wire, count);
  }
#ifdef BRAID_GRADSYNC_X86
  if (cpu().f16c) return narrowHalfF16c(source, wire, count);
#endif
  for (size_t i = 0; i < count; i++) wire[i] = floatToHalf(source[i]);
}

void widenFloats(const uint16_t* wire, float* destination, size_t count, ncclDataType_t wireType) {
  if (wireType == ncclBfloat16) {
#ifdef BRAID_GRADSYNC_X86
    if (cpu().avx2) return widenBfloat16Avx2(wire, destination, count);
#endif
    return widenBfloat16(wire, destination, count);
  }
#ifdef BRAID_GRADSYNC_X86
  if (cpu().f16c) return widenHalfF16c(wire, destination, count);
#endif
  for (size_t i = 0; i < count; i++) destination[i] = halfToFloat(wire[i]);
}

}  // namespace braid::gradsync
