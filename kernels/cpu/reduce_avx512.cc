// The AVX-512 variants (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq): fp16 and fp8
// e5m2 through the 16-lane vcvtph2ps/vcvtps2ph of AVX512F, every other conversion and op through
// the vectorised loops of reduce_loops.h.
//
// reduceAvx512Bf16 additionally rounds bf16 with AVX512-BF16's vcvtneps2bf16. That instruction
// flushes float subnormals to zero, so lanes holding one are redone with the exact integer
// rounding: every variant gives the same round-to-nearest-even bits.
// AVX512-FP16 is not used: its half arithmetic would round each step to half, and its
// conversions are no faster than AVX512F's for the float computation the semantics require.
// GCC 12 reports its own _mm512_undefined_* as maybe-uninitialized once inlined (GCC PR 105593);
// the report points into the header, so silencing it there keeps the warning for this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#include <immintrin.h>
#endif

#include "kernels/cpu/reduce_loops.h"

namespace braid::kernels::cpu {
namespace {

template <bool kBf16Instructions>
struct Avx512Conversions;

/// Conversions shared by both AVX-512 variants; Self is the variant (for distinct instances).
template <class Self>
struct Avx512Common {
  template <int D>
  static void decode(const typename ElementType<D>::Storage* src, float* dst, std::size_t n) {
    std::size_t i = 0;
    if constexpr (D == dtype::kFloat16) {
      for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
      }
    } else if constexpr (D == dtype::kFp8E5M2) {  // e5m2 is the upper byte of a binary16
      for (; i + 16 <= n; i += 16) {
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        const __m256i h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(bytes), 8);
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
      }
    }
    decodeLoop<Self, D>(src + i, dst + i, n - i);
  }

  template <int D>
  static void encodeCommon(const float* src, typename ElementType<D>::Storage* dst, std::size_t n) {
    std::size_t i = 0;
    if constexpr (D == dtype::kFloat16) {
      for (; i + 16 <= n; i += 16) {
        const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), h);
      }
    }
    encodeLoop<Self, D>(src + i, dst + i, n - i);
  }
};

template <>
struct Avx512Conversions<false> : Avx512Common<Avx512Conversions<false>> {
  template <int D>
  static void encode(const float* src, typename ElementType<D>::Storage* dst, std::size_t n) {
    encodeCommon<D>(src, dst, n);
  }
};

#if defined(BRAID_KERNELS_AVX512BF16)

/// Exact round-to-nearest-even of 16 finite floats to bf16 (the integer form of floatToBf16).
inline __m256i roundToBf16Exact(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
  const __m512i bias = _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF));
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_add_epi32(x, bias), 16));
}

__attribute__((target("avx512bf16"))) void encodeBf16Hardware(const float* src, std::uint16_t* dst,
                                                              std::size_t n) {
  constexpr int kSubnormal = 0x20;  // vfpclassps category: denormal
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(src + i);
    __m256i bits = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(v));
    const __mmask16 subnormal = _mm512_fpclass_ps_mask(v, kSubnormal);
    if (subnormal) bits = _mm256_mask_blend_epi16(subnormal, bits, roundToBf16Exact(v));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), bits);
  }
  encodeLoop<Avx512Conversions<true>, dtype::kBfloat16>(src + i, dst + i, n - i);
}

template <>
struct Avx512Conversions<true> : Avx512Common<Avx512Conversions<true>> {
  template <int D>
  static void encode(const float* src, typename ElementType<D>::Storage* dst, std::size_t n) {
    if constexpr (D == dtype::kBfloat16) {
      encodeBf16Hardware(src, dst, n);
    } else {
      encodeCommon<D>(src, dst, n);
    }
  }
};

#endif  // BRAID_KERNELS_AVX512BF16

}  // namespace

void reduceAvx512(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                  std::size_t count, unsigned flags) {
  reduceAll<Avx512Conversions<false>>(op, out0, out1, acc, local, count, flags);
}

void decodeAvx512(int dtype, const void* src, float* dst, std::size_t n) {
  decodeAll<Avx512Conversions<false>>(dtype, src, dst, n);
}

void encodeAvx512(int dtype, const float* src, void* dst, std::size_t n) {
  encodeAll<Avx512Conversions<false>>(dtype, src, dst, n);
}

#if defined(BRAID_KERNELS_AVX512BF16)
void encodeAvx512Bf16(int dtype, const float* src, void* dst, std::size_t n) {
  if (dtype == dtype::kBfloat16) {
    encodeBf16Hardware(src, static_cast<std::uint16_t*>(dst), n);
  } else {
    encodeAvx512(dtype, src, dst, n);
  }
}

// Only bf16 differs from reduceAvx512, so only bf16 gets its own instantiation.
void reduceAvx512Bf16(const ReduceOp& op, void* out0, void* out1, const void* acc,
                      const void* local, std::size_t count, unsigned flags) {
  if (op.dtype != dtype::kBfloat16 || count == 0) {
    reduceAvx512(op, out0, out1, acc, local, count, flags);
    return;
  }
  const ReduceArgs a = resolveArgs(op, out0, out1, acc, local, count, flags);
  reduceTyped<Avx512Conversions<true>, dtype::kBfloat16>(op.op, a);
}
#endif

}  // namespace braid::kernels::cpu
