// Reduction and copy kernels over host memory: the one entry point the algorithms call.
// The element-wise op definitions live in ops.h (shared with the CUDA kernels); this header is
// the dispatch surface: a dtype x op switch onto vectorised loops chosen at run time for the CPU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid::kernels {

/// Built-in base operations (values match ncclRedOp_t's sum/prod/max/min).
enum class BaseOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

/// A fully resolved reduction: what the algorithms pass to every reduce call.
/// ncclAvg is resolved as NCCL does: for floating dtypes {kSum, preMul = true, scalar =
/// (dtype)(1/nranks)} (1/nranks rounded through float, except for fp64), each rank's input
/// multiplied and rounded before the sum; for integer dtypes {kSum, postDiv = nranks}, the sum
/// divided and truncated. A PreMulSum op becomes {kSum, preMul = true, scalar}.
struct ReduceOp {
  int dtype = 7;             ///< ncclDataType_t value (0..11)
  BaseOp op = BaseOp::kSum;  ///< the binary operation
  bool preMul = false;       ///< multiply the local operand by `scalar` (when kApplyPre is set)
  alignas(8) unsigned char scalar[8] = {};  ///< premul factor in the dtype's own representation
  std::uint32_t postDiv = 1;  ///< >1: divide the final value by this (when kApplyPost is set)
};

/// Flags of one reduce call: whether the local operand gets the pre-op and the result the post-op.
enum : unsigned { kApplyPre = 1u, kApplyPost = 2u };

/// out0[i] = post( acc[i] OP pre(local[i]) ) for i < count.
/// - acc == nullptr: out0[i] = post(pre(local[i])) (the first contribution of a rank).
/// - out1 (optional, may be nullptr) receives the same values as out0: one read, two writes.
/// - out0/out1 may alias acc or local exactly; no partial overlaps.
/// - fp16, bf16 and fp8 are computed in float and rounded to nearest-even once per call.
/// - Integer sum/prod wrap (two's complement); integer postDiv truncates toward zero.
/// - max/min ignore a NaN operand (fmaxf/fminf, as NCCL) and order -0 < +0; fp8 saturates to
///   the largest finite value (__NV_SATFINITE). The full element semantics: kernels/ops.h.
/// - Results are bit-identical across the CPU variants (scalar, AVX2, AVX-512).
void reduce(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
            std::size_t count, unsigned flags);

/// out0 = src and (if out1 != nullptr) out1 = src, for `bytes` bytes; regions do not overlap.
void copy(void* out0, void* out1, const void* src, std::size_t bytes);

/// Size in bytes of one element of dtype (0 for an invalid dtype).
std::size_t typeSize(int dtype);

/// The instruction set the dispatcher chose on this CPU ("avx512", "avx2" or "scalar");
/// BRAID_KERNEL_ISA=avx512|avx2|scalar caps it (for tests and benchmarks); other values are
/// ignored. The choice is made once, at the first call.
const char* isaName();

}  // namespace braid::kernels
