// Temporary scalar implementation until the vectorised kernels land.
#include <cstring>
#include "kernels/reduce.h"
namespace braid::kernels {
std::size_t typeSize(int dtype) {
  static const std::size_t sizes[12] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return (dtype >= 0 && dtype < 12) ? sizes[dtype] : 0;
}
void copy(void* out0, void* out1, const void* src, std::size_t bytes) {
  if (out0 != src) std::memcpy(out0, src, bytes);
  if (out1) std::memcpy(out1, src, bytes);
}
template <typename T>
static void reduceT(const ReduceOp& op, T* o0, T* o1, const T* acc, const T* loc, std::size_t n, unsigned flags) {
  T s; std::memcpy(&s, op.scalar, sizeof(T));
  for (std::size_t i = 0; i < n; i++) {
    T l = loc[i];
    if ((flags & kApplyPre) && op.preMul) l = static_cast<T>(l * s);
    T v = l;
    if (acc) {
      T a = acc[i];
      switch (op.op) {
        case BaseOp::kSum: v = static_cast<T>(a + l); break;
        case BaseOp::kProd: v = static_cast<T>(a * l); break;
        case BaseOp::kMax: v = a > l ? a : l; break;
        case BaseOp::kMin: v = a < l ? a : l; break;
      }
    }
    if ((flags & kApplyPost) && op.postDiv > 1) v = static_cast<T>(v / static_cast<T>(op.postDiv));
    o0[i] = v;
    if (o1) o1[i] = v;
  }
}
void reduce(const ReduceOp& op, void* o0, void* o1, const void* acc, const void* loc, std::size_t n, unsigned flags) {
  switch (op.dtype) {
    case 0: reduceT(op, (int8_t*)o0, (int8_t*)o1, (const int8_t*)acc, (const int8_t*)loc, n, flags); break;
    case 1: reduceT(op, (uint8_t*)o0, (uint8_t*)o1, (const uint8_t*)acc, (const uint8_t*)loc, n, flags); break;
    case 2: reduceT(op, (int32_t*)o0, (int32_t*)o1, (const int32_t*)acc, (const int32_t*)loc, n, flags); break;
    case 3: reduceT(op, (uint32_t*)o0, (uint32_t*)o1, (const uint32_t*)acc, (const uint32_t*)loc, n, flags); break;
    case 4: reduceT(op, (int64_t*)o0, (int64_t*)o1, (const int64_t*)acc, (const int64_t*)loc, n, flags); break;
    case 5: reduceT(op, (uint64_t*)o0, (uint64_t*)o1, (const uint64_t*)acc, (const uint64_t*)loc, n, flags); break;
    case 7: reduceT(op, (float*)o0, (float*)o1, (const float*)acc, (const float*)loc, n, flags); break;
    case 8: reduceT(op, (double*)o0, (double*)o1, (const double*)acc, (const double*)loc, n, flags); break;
    default: break;
  }
}
const char* isaName() { return "scalar"; }
}  // namespace braid::kernels
