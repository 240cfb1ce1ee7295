// The AVX-512 variant with AVX512-BF16 (this unit alone is compiled with -mavx512bf16 on top of
// the AVX-512 flags). Only bf16 differs from reduce_avx512.cc, so only bf16 is instantiated here.
#include "kernels/cpu/avx512_conversions.h"

#if !defined(__AVX512BF16__)
#error "reduce_avx512_bf16.cc must be compiled with -mavx512bf16"
#endif

namespace braid::kernels::cpu {

void reduceAvx512Bf16(const ReduceOp& op, void* out0, void* out1, const void* acc,
                      const void* local, std::size_t count, unsigned flags) {
  if (op.dtype != dtype::kBfloat16) return reduceAvx512(op, out0, out1, acc, local, count, flags);
  if (count == 0) return;
  const ReduceArgs a = resolveArgs(op, out0, out1, acc, local, count, flags);
  reduceTyped<Avx512Conversions<true>, dtype::kBfloat16>(op.op, a);
}

void encodeAvx512Bf16(int dtype, const float* src, void* dst, std::size_t n) {
  if (dtype != dtype::kBfloat16) return encodeAvx512(dtype, src, dst, n);
  encodeN<Avx512Conversions<true>, dtype::kBfloat16>(src, static_cast<std::uint16_t*>(dst), n);
}

}  // namespace braid::kernels::cpu
