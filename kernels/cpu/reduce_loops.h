// The CPU reduce loops, written once over the op functors of kernels/ops.h and compiled once per
// ISA variant (reduce_scalar.cc, reduce_avx2.cc, reduce_avx512.cc, each with its own -m flags).
//
// Every template here takes the variant's conversion policy `Simd` as its first parameter. The
// policies live in anonymous namespaces, so each instantiation has internal linkage: the linker
// can never merge an AVX-512 instantiation into the portable variant (a SIGILL on older CPUs).
//
// A policy says which narrow float dtypes D (fp16, bf16, fp8) it converts with its own vector
// routines, kBlock elements (one register) at a time, bit-identical to ElementType<D>::load/store:
//   static constexpr std::size_t kBlock;
//   template <int D> static constexpr bool decodesBlocks();  // decodeBlock<D> exists
//   template <int D> static constexpr bool encodesBlocks();  // encodeBlock<D> exists
//   template <int D> static void decodeBlock(const Storage* src, float* dst);
//   template <int D> static void encodeBlock(const float* src, Storage* dst);
// Other dtypes use the scalar definitions in long loops, which the compiler vectorises (under
// -fno-trapping-math). Short fixed-length loops over them compile poorly, hence no portable
// block form.
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

// ---- Conversions ----------------------------------------------------------------------------

template <int D>
using StorageOf = typename ElementType<D>::Storage;

/// Elements per chunk of the fused narrow loop when a dtype has no register-block routines.
inline constexpr std::size_t kChunkElements = 256;

template <class Simd, int D>
void decodeN(const StorageOf<D>* src, float* dst, std::size_t n) {
  std::size_t whole = 0;
  if constexpr (Simd::template decodesBlocks<D>()) {
    whole = n - n % Simd::kBlock;
    for (std::size_t i = 0; i < whole; i += Simd::kBlock) {
      Simd::template decodeBlock<D>(src + i, dst + i);
    }
  }
  for (std::size_t i = whole; i < n; ++i) dst[i] = ElementType<D>::load(src[i]);
}

template <class Simd, int D>
void encodeN(const float* src, StorageOf<D>* dst, std::size_t n) {
  std::size_t whole = 0;
  if constexpr (Simd::template encodesBlocks<D>()) {
    whole = n - n % Simd::kBlock;
    for (std::size_t i = 0; i < whole; i += Simd::kBlock) {
      Simd::template encodeBlock<D>(src + i, dst + i);
    }
  }
  for (std::size_t i = whole; i < n; ++i) dst[i] = ElementType<D>::store(src[i]);
}

// ---- Element-wise loops ----------------------------------------------------------------------
// BRAID_NO_LOOP_CARRIED_DEPENDENCY: out0/out1 may alias acc or local exactly, which carries no
// dependency between iterations; without the hint the compiler adds overlap checks and runs exact
// aliasing (in-place reduction, the common case) through its scalar fallback.
#if defined(__clang__)
#define BRAID_NO_LOOP_CARRIED_DEPENDENCY _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define BRAID_NO_LOOP_CARRIED_DEPENDENCY _Pragma("GCC ivdep")
#else
#define BRAID_NO_LOOP_CARRIED_DEPENDENCY
#endif

/// out0[i] = out1[i] = acc[i] OP pre(local[i]): the hot path of the native types.
template <class Simd, class T, class Op, bool kPre, bool kOut1>
void fusedNative(T* out0, T* out1, const T* acc, const T* local, T scalar, std::size_t n) {
  const Op op;
  std::size_t i = 0;
  if constexpr (kOut1) {
    // Two outputs: write a whole cache line of out0, then of out1. Interleaving 32-byte stores
    // to the two streams halves the bandwidth on some CPUs (measured on Sapphire Rapids).
    constexpr std::size_t kLine = 64 / sizeof(T);
    for (; i + kLine <= n; i += kLine) {
      alignas(64) T line[kLine];
      for (std::size_t j = 0; j < kLine; ++j) {
        T right = local[i + j];
        if constexpr (kPre) right = wrapMul(right, scalar);
        line[j] = op(acc[i + j], right);
      }
      for (std::size_t j = 0; j < kLine; ++j) out0[i + j] = line[j];
      for (std::size_t j = 0; j < kLine; ++j) out1[i + j] = line[j];
    }
  }
  BRAID_NO_LOOP_CARRIED_DEPENDENCY
  for (; i < n; ++i) {
    T right = local[i];
    if constexpr (kPre) right = wrapMul(right, scalar);
    const T value = op(acc[i], right);
    out0[i] = value;
    if constexpr (kOut1) out1[i] = value;
  }
}

/// The same for narrow floats. With register-block conversions each block stays in registers
/// from load to store; otherwise it goes through L1-sized chunks.
template <class Simd, int D, class Op, bool kPre, bool kOut1>
void fusedNarrow(StorageOf<D>* out0, StorageOf<D>* out1, const StorageOf<D>* acc,
                 const StorageOf<D>* local, float scalar, std::size_t n) {
  using E = ElementType<D>;
  using S = StorageOf<D>;
  constexpr bool kRegisters =
      Simd::template decodesBlocks<D>() && Simd::template encodesBlocks<D>();
  constexpr std::size_t kStep = kRegisters ? Simd::kBlock : kChunkElements;
  auto decode = [](const S* src, float* dst) {
    if constexpr (kRegisters) {
      Simd::template decodeBlock<D>(src, dst);
    } else {
      decodeN<Simd, D>(src, dst, kStep);
    }
  };
  auto encode = [](const float* src, S* dst) {
    if constexpr (kRegisters) {
      Simd::template encodeBlock<D>(src, dst);
    } else {
      encodeN<Simd, D>(src, dst, kStep);
    }
  };
  const Op op;
  std::size_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    alignas(64) float left[kStep];
    alignas(64) float right[kStep];
    alignas(64) S result[kStep];
    decode(acc + i, left);
    decode(local + i, right);
    if constexpr (kPre) {  // local * scalar, rounded to the dtype before the op
      for (std::size_t j = 0; j < kStep; ++j) right[j] *= scalar;
      encode(right, result);
      decode(result, right);
    }
    for (std::size_t j = 0; j < kStep; ++j) left[j] = op(left[j], right[j]);
    encode(left, result);
    std::memcpy(out0 + i, result, sizeof(result));
    if constexpr (kOut1) std::memcpy(out1 + i, result, sizeof(result));
  }
  for (; i < n; ++i) {
    float right = E::load(local[i]);
    if constexpr (kPre) right = preMultiply<E>(right, scalar);
    const S value = E::store(op(E::load(acc[i]), right));
    out0[i] = value;
    if constexpr (kOut1) out1[i] = value;
  }
}

/// Picks the fused instantiation for the run-time pre/out1 flags.
template <class Simd, class Fused, class S, class Scalar>
void runFused(const ReduceArgs& a, Scalar scalar) {
  S* out0 = static_cast<S*>(a.out0);
  S* out1 = static_cast<S*>(a.out1);
  const S* acc = static_cast<const S*>(a.acc);
  const S* local = static_cast<const S*>(a.local);
  if (a.pre) {
    if (out1) return Fused::template run<true, true>(out0, out1, acc, local, scalar, a.count);
    return Fused::template run<true, false>(out0, out1, acc, local, scalar, a.count);
  }
  if (out1) return Fused::template run<false, true>(out0, out1, acc, local, scalar, a.count);
  return Fused::template run<false, false>(out0, out1, acc, local, scalar, a.count);
}

template <class Simd, class T, class Op>
struct FusedNativeLoops {
  template <bool kPre, bool kOut1>
  static void run(T* out0, T* out1, const T* acc, const T* local, T scalar, std::size_t n) {
    fusedNative<Simd, T, Op, kPre, kOut1>(out0, out1, acc, local, scalar, n);
  }
};

template <class Simd, int D, class Op>
struct FusedNarrowLoops {
  template <bool kPre, bool kOut1>
  static void run(StorageOf<D>* out0, StorageOf<D>* out1, const StorageOf<D>* acc,
                  const StorageOf<D>* local, float scalar, std::size_t n) {
    fusedNarrow<Simd, D, Op, kPre, kOut1>(out0, out1, acc, local, scalar, n);
  }
};

// ---- Staged per tile: postDiv (avg), or no accumulator with preMul ---------------------------
// A tile is read whole before out0/out1 are written, so exact aliasing stays safe.

/// result[i] = acc[i] OP right[i], into a tile (result may be right).
template <class Simd, class T, class Op>
void opIntoTile(T* result, const T* acc, const T* right, std::size_t n) {
  const Op op;
  BRAID_NO_LOOP_CARRIED_DEPENDENCY
  for (std::size_t i = 0; i < n; ++i) result[i] = op(acc[i], right[i]);
}

template <class Simd, class T>
void multiplyTile(T* result, const T* values, T scalar, std::size_t n) {
  BRAID_NO_LOOP_CARRIED_DEPENDENCY
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
  using T = StorageOf<D>;
  T scalar;
  std::memcpy(&scalar, a.scalar, sizeof(T));
  if (a.acc && !a.post) return runFused<Simd, FusedNativeLoops<Simd, T, Op>, T>(a, scalar);
  const std::size_t n = a.count;
  if (!a.pre && !a.post) return copyBytes(a.out0, a.out1, a.local, n * sizeof(T));
  const T* acc = static_cast<const T*>(a.acc);
  const T* local = static_cast<const T*>(a.local);
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
  using S = StorageOf<D>;
  S scalarBits;
  std::memcpy(&scalarBits, a.scalar, sizeof(S));
  const float scalar = E::load(scalarBits);
  if (a.acc && !a.post) return runFused<Simd, FusedNarrowLoops<Simd, D, Op>, S>(a, scalar);
  const std::size_t n = a.count;
  // No accumulator, no pre/post: out = local, the bits pass through unchanged.
  if (!a.pre && !a.post) return copyBytes(a.out0, a.out1, a.local, n * sizeof(S));
  alignas(64) float right[kTileElements];
  alignas(64) float left[kTileElements];
  alignas(64) S rounded[kTileElements];
  const S* acc = static_cast<const S*>(a.acc);
  const S* local = static_cast<const S*>(a.local);
  for (std::size_t base = 0; base < n; base += kTileElements) {
    const std::size_t m = n - base < kTileElements ? n - base : kTileElements;
    decodeN<Simd, D>(local + base, right, m);
    if (a.pre) {  // local * scalar, rounded to the dtype before the op
      multiplyTile<Simd>(right, right, scalar, m);
      encodeN<Simd, D>(right, rounded, m);
      decodeN<Simd, D>(rounded, right, m);
    }
    float* result = right;
    if (acc) {
      decodeN<Simd, D>(acc + base, left, m);
      opIntoTile<Simd, float, Op>(left, left, right, m);
      result = left;
    }
    if (a.post) divideTile<Simd>(result, a.divisor, m);
    encodeN<Simd, D>(result, rounded, m);
    storeTile(a, base, rounded, m);
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
      return decodeN<Simd, dtype::kFloat16>(static_cast<const std::uint16_t*>(src), dst, n);
    case dtype::kBfloat16:
      return decodeN<Simd, dtype::kBfloat16>(static_cast<const std::uint16_t*>(src), dst, n);
    case dtype::kFp8E4M3:
      return decodeN<Simd, dtype::kFp8E4M3>(static_cast<const std::uint8_t*>(src), dst, n);
    case dtype::kFp8E5M2:
      return decodeN<Simd, dtype::kFp8E5M2>(static_cast<const std::uint8_t*>(src), dst, n);
    default:
      return;
  }
}

template <class Simd>
void encodeAll(int d, const float* src, void* dst, std::size_t n) {
  switch (d) {
    case dtype::kFloat16:
      return encodeN<Simd, dtype::kFloat16>(src, static_cast<std::uint16_t*>(dst), n);
    case dtype::kBfloat16:
      return encodeN<Simd, dtype::kBfloat16>(src, static_cast<std::uint16_t*>(dst), n);
    case dtype::kFp8E4M3:
      return encodeN<Simd, dtype::kFp8E4M3>(src, static_cast<std::uint8_t*>(dst), n);
    case dtype::kFp8E5M2:
      return encodeN<Simd, dtype::kFp8E5M2>(src, static_cast<std::uint8_t*>(dst), n);
    default:
      return;
  }
}

}  // namespace braid::kernels::cpu
