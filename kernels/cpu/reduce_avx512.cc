// The AVX-512 variant (compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq); the
// conversions are in avx512_conversions.h.
#include "kernels/cpu/avx512_conversions.h"

namespace braid::kernels::cpu {

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

}  // namespace braid::kernels::cpu
