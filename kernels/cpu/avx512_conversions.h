// The AVX-512 conversion policy (see reduce_loops.h), shared by reduce_avx512.cc and
// reduce_avx512_bf16.cc. It sits in an anonymous namespace on purpose: each of those units
// is compiled with its own flags and must get its own copy.
//
// fp16 (and e5m2 decoding) go through AVX512F's 16-lane vcvtph2ps/vcvtps2ph, bf16 through integer
// rounding in zmm registers or, with BF16 instructions (the unit compiled with -mavx512bf16),
// vcvtneps2bf16; that instruction flushes float subnormals to zero, so a block holding one takes
// the integer rounding and every variant gives the same round-to-nearest-even bits.
// AVX512-FP16 is not used: its half arithmetic would round each step to half, and its
// conversions are no faster than AVX512F's for the float computation the semantics require.
#pragma once

// GCC 12 reports its own _mm512_undefined_* as (maybe-)uninitialized once inlined (PR 105593);
// the report points into the header, so silencing it there keeps the warning for our code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include "kernels/cpu/reduce_loops.h"

namespace braid::kernels::cpu {
namespace {

template <bool kBf16Instructions>
struct Avx512Conversions {
  static constexpr std::size_t kBlock = 16;

  template <int D>
  static constexpr bool decodesBlocks() {
    return D == dtype::kFloat16 || D == dtype::kBfloat16 || D == dtype::kFp8E5M2;
  }
  template <int D>
  static constexpr bool encodesBlocks() {
    return D == dtype::kFloat16 || D == dtype::kBfloat16;
  }

  template <int D>
  static void decodeBlock(const StorageOf<D>* src, float* dst) {
    if constexpr (D == dtype::kFloat16) {
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      _mm512_storeu_ps(dst, _mm512_cvtph_ps(h));
    } else if constexpr (D == dtype::kBfloat16) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
      const __m512i bits = _mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16);
      _mm512_storeu_ps(dst, _mm512_castsi512_ps(bits));
    } else {  // e5m2 is the upper byte of a binary16
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      _mm512_storeu_ps(dst, _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8)));
    }
  }

  template <int D>
  static void encodeBlock(const float* src, StorageOf<D>* dst) {
    const __m512 v = _mm512_loadu_ps(src);
    __m256i packed;
    if constexpr (D == dtype::kFloat16) {
      packed = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      packed = roundToBf16(v);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), packed);
  }

  /// floatToBf16 on 16 lanes: integer round-to-nearest-even, NaN made quiet.
  static __m256i roundToBf16Exact(__m512 v) {
    const __m512i x = _mm512_castps_si512(v);
    const __m512i high = _mm512_srli_epi32(x, 16);
    const __m512i bias =
        _mm512_add_epi32(_mm512_and_si512(high, _mm512_set1_epi32(1)), _mm512_set1_epi32(0x7FFF));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, bias), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    const __m512i bits = _mm512_mask_or_epi32(rounded, nan, high, _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(bits);
  }

  static __m256i roundToBf16(__m512 v) {
#if defined(__AVX512BF16__)
    if constexpr (kBf16Instructions) {
      // vcvtneps2bf16 flushes subnormal inputs to zero: those (rare) blocks take the exact path.
      constexpr int kSubnormal = 0x20;  // vfpclassps category: denormal
      if (_mm512_fpclass_ps_mask(v, kSubnormal) == 0) {
        return reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
      }
    }
#endif
    return roundToBf16Exact(v);
  }
};

}  // namespace
}  // namespace braid::kernels::cpu
