// The portable variant: the loops of reduce_loops.h with the portable conversions, compiled
// without ISA flags (on x86-64 the compiler still vectorises with the SSE2 baseline).
#include "kernels/cpu/reduce_loops.h"

namespace braid::kernels::cpu {
namespace {

/// No vector routines of its own: every conversion is the scalar definition in a long loop.
struct PortableConversions {
  static constexpr std::size_t kBlock = 1;
  template <int D>
  static constexpr bool decodesBlocks() {
    return false;
  }
  template <int D>
  static constexpr bool encodesBlocks() {
    return false;
  }
};

}  // namespace

void reduceScalar(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                  std::size_t count, unsigned flags) {
  reduceAll<PortableConversions>(op, out0, out1, acc, local, count, flags);
}

void decodeScalar(int dtype, const void* src, float* dst, std::size_t n) {
  decodeAll<PortableConversions>(dtype, src, dst, n);
}

void encodeScalar(int dtype, const float* src, void* dst, std::size_t n) {
  encodeAll<PortableConversions>(dtype, src, dst, n);
}

}  // namespace braid::kernels::cpu
