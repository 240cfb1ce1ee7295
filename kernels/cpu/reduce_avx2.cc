// The AVX2 variant (compiled with -mavx2 -mf16c): fp16 through F16C's vcvtph2ps/vcvtps2ph, bf16
// through integer rounding in ymm registers, fp8 e5m2 decoding through vcvtph2ps; the rest of
// the conversions and every op through the vectorised loops of reduce_loops.h.
// FMA is deliberately not enabled: a fused multiply-add would skip the rounding that premulsum
// requires between the multiply and the add.
#include <immintrin.h>

#include "kernels/cpu/reduce_loops.h"

namespace braid::kernels::cpu {
namespace {

struct Avx2Conversions {
  static constexpr std::size_t kBlock = 8;

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
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      _mm256_storeu_ps(dst, _mm256_cvtph_ps(h));
    } else if constexpr (D == dtype::kBfloat16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
      const __m256i bits = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
      _mm256_storeu_ps(dst, _mm256_castsi256_ps(bits));
    } else {  // e5m2 is the upper byte of a binary16
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src));
      _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(bytes), 8)));
    }
  }

  template <int D>
  static void encodeBlock(const float* src, StorageOf<D>* dst) {
    const __m256 v = _mm256_loadu_ps(src);
    __m128i packed;
    if constexpr (D == dtype::kFloat16) {
      packed = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {  // bf16: floatToBf16 on 8 lanes
      const __m256i x = _mm256_castps_si256(v);
      const __m256i high = _mm256_srli_epi32(x, 16);
      const __m256i bias =
          _mm256_add_epi32(_mm256_and_si256(high, _mm256_set1_epi32(1)), _mm256_set1_epi32(0x7FFF));
      const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
      const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
      const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      const __m256i bits = _mm256_blendv_epi8(rounded, quiet, nan);
      packed = _mm_packus_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), packed);
  }
};

}  // namespace

void reduceAvx2(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                std::size_t count, unsigned flags) {
  reduceAll<Avx2Conversions>(op, out0, out1, acc, local, count, flags);
}

void decodeAvx2(int dtype, const void* src, float* dst, std::size_t n) {
  decodeAll<Avx2Conversions>(dtype, src, dst, n);
}

void encodeAvx2(int dtype, const float* src, void* dst, std::size_t n) {
  encodeAll<Avx2Conversions>(dtype, src, dst, n);
}

}  // namespace braid::kernels::cpu
