#include "bench/micro/stream_add.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace braid::bench {
namespace {

void streamAddBaseline(double* __restrict c, const double* __restrict a, const double* __restrict b,
                       std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) void streamAddAvx2(double* __restrict c, const double* __restrict a,
                                                   const double* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

// c must be 32-byte aligned (the benchmark's buffers are page-aligned); n a multiple of 4.
__attribute__((target("avx2"))) void streamAddAvx2NonTemporal(double* __restrict c,
                                                              const double* __restrict a,
                                                              const double* __restrict b,
                                                              std::size_t n) {
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_stream_pd(c + i, _mm256_add_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i)));
  for (; i < n; ++i) c[i] = a[i] + b[i];
  _mm_sfence();
}

#if defined(__clang__)
#define BRAID_TARGET_AVX512 __attribute__((target("avx512f")))
#else
#define BRAID_TARGET_AVX512 __attribute__((target("avx512f,prefer-vector-width=512")))
#endif
BRAID_TARGET_AVX512 void streamAddAvx512(double* __restrict c, const double* __restrict a,
                                         const double* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}
#endif

}  // namespace

StreamAddFn streamAddFor(kernels::cpu::Variant variant) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (variant) {
    case kernels::cpu::Variant::kAvx2:
      return streamAddAvx2;
    case kernels::cpu::Variant::kAvx512:
    case kernels::cpu::Variant::kAvx512Bf16:
      return streamAddAvx512;
    default:
      break;
  }
#endif
  (void)variant;
  return streamAddBaseline;
}

StreamAddFn streamAddNonTemporalFor(kernels::cpu::Variant variant) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (variant == kernels::cpu::Variant::kAvx2) return streamAddAvx2NonTemporal;
#endif
  (void)variant;
  return nullptr;
}

}  // namespace braid::bench
