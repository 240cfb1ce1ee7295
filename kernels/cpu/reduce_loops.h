// The CPU reduce loops, written once over the op functors of kernels/ops.h and compiled once per
// ISA variant (reduce_scalar.cc, reduce_avx2.cc, reduce_avx512.cc, each with its own -m flags).
//
// Every template here takes the variant's conversion policy `Simd` as its first parameter. The
// policies live in anonymous namespaces, so each instantiation has internal linkage: the linker
// can never merge an AVX-512 instantiation into the portable variant (a SIGILL on older CPUs).
//
// A policy provides, for every narrow float dtype D (fp16, bf16, fp8):
//   template <int D> static void decode(const Storage* src, float* dst, std::size_t n);
//   template <int D> static void encode(const float* src, Storage* dst, std::size_t n);
// bit-identical to ElementType<D>::load/store; decodeLoop/encodeLoop below are the portable form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "kernels/reduce.h"

namespace braid::kernels::cpu {

/// Elements per tile of the staged paths: two float tiles stay well inside L1.
inline constexpr std::size_t kTileElements = 1024;

/// One reduce call with its flags resolved.
struct ReduceArgs {
  void* out0;
  void* out1;
  const void* acc;
  const void* local;
  std::size_t count;
  bool pre;                     ///< multiply local by scalar
  bool post;                    ///< divide the result by divisor
  const unsigned char* scalar;  ///< premul factor in the dtype's representation
  std::uint32_t divisor;
};

template <class T>
T* offsetBy(void* p, std::size_t elements) {
  return p ? static_cast<T*>(p) + elements : nullptr;
}
template <class T>
const T* offsetBy(const void* p, std::size_t elements) {
  return static_cast<const T*>(p) + elements;
}

// ---- Portable conversion loops (the compiler vectorises them under -fno-trapping-math) -------

template <class Simd, int D>
void decodeLoop(const typename ElementType<D>::Storage* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = ElementType<D>::load(src[i]);
}

template <class Simd, int D>
void encodeLoop(const float* src, typename ElementType<D>::Storage* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = ElementType<D>::store(src[i]);
}

// ---- Element-wise loops ----------------------------------------------------------------------
// `#pragma GCC ivdep`: out0/out1 may alias acc or local exactly, which carries no dependency
// between iterations; without it the compiler would add overlap checks and run exact aliasing
// (in-place reduction, the common case) through its scalar fallback.

/// out0[i] = out1[i] = acc[i] OP local[i]: the hot path (no pre/post).
template <class Simd, class T, class Op, bool kOut1>
void fusedLoop(T* out0, T* out1, const T* acc, const T* local, std::size_t n) {
  const Op op;
#pragma GCC ivdep
  for (std::size_t i = 0; i < n; ++i) {
    const T value = op(acc[i], local[i]);
    out0[i] = value;
    if constexpr (kOut1) out1[i] = value;
  }
}

/// result[i] = acc[i] OP right[i], into a tile (result may be right).
template <class Simd, class T, class Op>
void opIntoTile(T* result, const T* acc, const T* right, std::size_t n) {
  const Op op;
#pragma GCC ivdep
  for (std::size_t i = 0; i < n; ++i) result[i] = op(acc[i], right[i]);
}

template <class Simd, class T>
void multiplyTile(T* result, const T* values, T scalar, std::size_t n) {
#pragma GCC ivdep
  for (std::size_t i = 0; i < n; ++i) result[i] = wrapMul(values[i], scalar);
}

template <class Simd, class T>
void divideTile(T* values, std::uint32_t divisor, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) values[i] = postDivide(values[i], divisor);
}

template <class T>
void storeTile(const ReduceArgs& a, std::size_t base, const T* tile, std::size_t n) {
  std::memcpy(offsetBy<T>(a.out0, base), tile, n * sizeof(T));
  if (a.out1) std::memcpy(offsetBy<T>(a.out1, base), tile, n * sizeof(T));
}

// ---- Native types: integers, fp32, fp64 ------------------------------------------------------

template <class Simd, int D, class Op>
void reduceNative(const ReduceArgs& a) {
  using T = typename ElementType<D>::Storage;
  const std::size_t n = a.count;
  const T* acc = static_cast<const T*>(a.acc);
  const T* local = static_cast<const T*>(a.local);
  if (!a.pre && !a.post) {
    if (acc == nullptr) {
      copyBytes(a.out0, a.out1, a.local, n * sizeof(T));
    } else if (a.out1) {
      fusedLoop<Simd, T, Op, true>(static_cast<T*>(a.out0), static_cast<T*>(a.out1), acc, local, n);
    } else {
      fusedLoop<Simd, T, Op, false>(static_cast<T*>(a.out0), nullptr, acc, local, n);
    }
    return;
  }
  // Pre/post (premulsum, avg): staged per tile; a tile is read whole before out0/out1 are
  // written, so exact aliasing stays safe.
  T scalar;
  std::memcpy(&scalar, a.scalar, sizeof(T));
  alignas(64) T tile[kTileElements];
  for (std::size_t base = 0; base < n; base += kTileElements) {
    const std::size_t m = n - base < kTileElements ? n - base : kTileElements;
    const T* right = local + base;
    if (a.pre) {
      multiplyTile<Simd>(tile, right, scalar, m);
      right = tile;
    }
    if (acc) {
      opIntoTile<Simd, T, Op>(tile, acc + base, right, m);
    } else if (right != tile) {
      std::memcpy(tile, right, m * sizeof(T));
    }
    if (a.post) divideTile<Simd>(tile, a.divisor, m);
    storeTile(a, base, tile, m);
  }
}

// ---- Narrow floats: fp16, bf16, fp8 (computed in float) --------------------------------------

template <class Simd, int D, class Op>
void reduceNarrow(const ReduceArgs& a) {
  using E = ElementType<D>;
  using S = typename E::Storage;
  const std::size_t n = a.count;
  if (a.acc == nullptr && !a.pre && !a.post) {  // out = local: the bits pass through unchanged
    copyBytes(a.out0, a.out1, a.local, n * sizeof(S));
    return;
  }
  S scalarBits;
  std::memcpy(&scalarBits, a.scalar, sizeof(S));
  const float scalar = E::load(scalarBits);
  alignas(64) float right[kTileElements];
  alignas(64) float left[kTileElements];
  alignas(64) S rounded[kTileElements];
  const S* acc = static_cast<const S*>(a.acc);
  const S* local = static_cast<const S*>(a.local);
  for (std::size_t base = 0; base < n; base += kTileElements) {
    const std::size_t m = n - base < kTileElements ? n - base : kTileElements;
    Simd::template decode<D>(local + base, right, m);
    if (a.pre) {  // local * scalar, rounded to the dtype before the op
      multiplyTile<Simd>(right, right, scalar, m);
      Simd::template encode<D>(right, rounded, m);
      Simd::template decode<D>(rounded, right, m);
    }
    float* result = right;
    if (acc) {
      Simd::template decode<D>(acc + base, left, m);
      opIntoTile<Simd, float, Op>(left, left, right, m);
      result = left;
    }
    if (a.post) divideTile<Simd>(result, a.divisor, m);
    S* out0 = offsetBy<S>(a.out0, base);
    Simd::template encode<D>(result, out0, m);
    if (a.out1) std::memcpy(offsetBy<S>(a.out1, base), out0, m * sizeof(S));
  }
}

// ---- dtype x op switch -----------------------------------------------------------------------

inline constexpr bool isNarrowFloat(int d) {
  return d == dtype::kFloat16 || d == dtype::kBfloat16 || d == dtype::kFp8E4M3 ||
         d == dtype::kFp8E5M2;
}

template <class Simd, int D, class Op>
void reduceWithOp(const ReduceArgs& a) {
  if constexpr (isNarrowFloat(D)) {
    reduceNarrow<Simd, D, Op>(a);
  } else {
    reduceNative<Simd, D, Op>(a);
  }
}

template <class Simd, int D>
void reduceTyped(BaseOp op, const ReduceArgs& a) {
  switch (op) {
    case BaseOp::kSum:
      return reduceWithOp<Simd, D, SumOp>(a);
    case BaseOp::kProd:
      return reduceWithOp<Simd, D, ProdOp>(a);
    case BaseOp::kMax:
      return reduceWithOp<Simd, D, MaxOp>(a);
    case BaseOp::kMin:
      return reduceWithOp<Simd, D, MinOp>(a);
  }
}

inline ReduceArgs resolveArgs(const ReduceOp& op, void* out0, void* out1, const void* acc,
                              const void* local, std::size_t count, unsigned flags) {
  return ReduceArgs{out0,
                    out1,
                    acc,
                    local,
                    count,
                    (flags & kApplyPre) != 0 && op.preMul,
                    (flags & kApplyPost) != 0 && op.postDiv > 1,
                    op.scalar,
                    op.postDiv};
}

/// The whole dtype x op switch for one variant. Invalid dtypes or ops do nothing (the API
/// layer validates them before any kernel runs).
template <class Simd>
void reduceAll(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
               std::size_t count, unsigned flags) {
  if (count == 0) return;
  const ReduceArgs a = resolveArgs(op, out0, out1, acc, local, count, flags);
  switch (op.dtype) {
    case dtype::kInt8:
      return reduceTyped<Simd, dtype::kInt8>(op.op, a);
    case dtype::kUint8:
      return reduceTyped<Simd, dtype::kUint8>(op.op, a);
    case dtype::kInt32:
      return reduceTyped<Simd, dtype::kInt32>(op.op, a);
    case dtype::kUint32:
      return reduceTyped<Simd, dtype::kUint32>(op.op, a);
    case dtype::kInt64:
      return reduceTyped<Simd, dtype::kInt64>(op.op, a);
    case dtype::kUint64:
      return reduceTyped<Simd, dtype::kUint64>(op.op, a);
    case dtype::kFloat16:
      return reduceTyped<Simd, dtype::kFloat16>(op.op, a);
    case dtype::kFloat32:
      return reduceTyped<Simd, dtype::kFloat32>(op.op, a);
    case dtype::kFloat64:
      return reduceTyped<Simd, dtype::kFloat64>(op.op, a);
    case dtype::kBfloat16:
      return reduceTyped<Simd, dtype::kBfloat16>(op.op, a);
    case dtype::kFp8E4M3:
      return reduceTyped<Simd, dtype::kFp8E4M3>(op.op, a);
    case dtype::kFp8E5M2:
      return reduceTyped<Simd, dtype::kFp8E5M2>(op.op, a);
    default:
      return;
  }
}

/// decode/encode of Conversions for one variant (narrow floats only).
template <class Simd>
void decodeAll(int d, const void* src, float* dst, std::size_t n) {
  switch (d) {
    case dtype::kFloat16:
      return Simd::template decode<dtype::kFloat16>(static_cast<const std::uint16_t*>(src), dst, n);
    case dtype::kBfloat16:
      return Simd::template decode<dtype::kBfloat16>(static_cast<const std::uint16_t*>(src), dst,
                                                     n);
    case dtype::kFp8E4M3:
      return Simd::template decode<dtype::kFp8E4M3>(static_cast<const std::uint8_t*>(src), dst, n);
    case dtype::kFp8E5M2:
      return Simd::template decode<dtype::kFp8E5M2>(static_cast<const std::uint8_t*>(src), dst, n);
    default:
      return;
  }
}

template <class Simd>
void encodeAll(int d, const float* src, void* dst, std::size_t n) {
  switch (d) {
    case dtype::kFloat16:
      return Simd::template encode<dtype::kFloat16>(src, static_cast<std::uint16_t*>(dst), n);
    case dtype::kBfloat16:
      return Simd::template encode<dtype::kBfloat16>(src, static_cast<std::uint16_t*>(dst), n);
    case dtype::kFp8E4M3:
      return Simd::template encode<dtype::kFp8E4M3>(src, static_cast<std::uint8_t*>(dst), n);
    case dtype::kFp8E5M2:
      return Simd::template encode<dtype::kFp8E5M2>(src, static_cast<std::uint8_t*>(dst), n);
    default:
      return;
  }
}

}  // namespace braid::kernels::cpu
