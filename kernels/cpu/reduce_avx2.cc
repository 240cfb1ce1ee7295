// The AVX2 variant (compiled with -mavx2 -mf16c): fp16 through F16C's vcvtph2ps/vcvtps2ph, every
// other conversion and op through the vectorised loops of reduce_loops.h.
// FMA is deliberately not enabled: a fused multiply-add would skip the rounding that premulsum
// requires between the multiply and the add.
#include <immintrin.h>

#include "kernels/cpu/reduce_loops.h"

namespace braid::kernels::cpu {
namespace {

struct Avx2Conversions {
  template <int D>
  static void decode(const typename ElementType<D>::Storage* src, float* dst, std::size_t n) {
    std::size_t i = 0;
    if constexpr (D == dtype::kFloat16) {
      for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
      }
    } else if constexpr (D == dtype::kFp8E5M2) {  // e5m2 is the upper byte of a binary16
      for (; i + 8 <= n; i += 8) {
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src + i));
        const __m128i h = _mm_slli_epi16(_mm_cvtepu8_epi16(bytes), 8);
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
      }
    }
    decodeLoop<Avx2Conversions, D>(src + i, dst + i, n - i);
  }

  template <int D>
  static void encode(const float* src, typename ElementType<D>::Storage* dst, std::size_t n) {
    std::size_t i = 0;
    if constexpr (D == dtype::kFloat16) {
      for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
      }
    }
    encodeLoop<Avx2Conversions, D>(src + i, dst + i, n - i);
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
