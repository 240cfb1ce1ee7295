// The data loops of the device primitives: copy and reduce at memory speed.
//
// A GPU hides the latency of its memory only with many bytes in flight. Each thread therefore
// moves 16-byte packs (one 128-bit load or store: a warp's access is then four whole 128-byte
// lines) and issues kUnroll of them before it uses the first, so that a block of T threads keeps
// T x kUnroll x 16 bytes (x 2 for a reduce's two inputs) on their way from memory. A head and a
// tail of single elements surround the pack body when the buffers do not start on a 16-byte
// boundary; buffers that are misaligned against each other (their addresses differ modulo 16)
// fall back to single elements, which the schedules avoid by cutting their parts at 16 bytes
// (ring_schedules.h: alignedPartOf).
//
// The same loops run on the host in the emulation (a block of one thread), where a pack is a
// 16-byte memcpy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/element.h"
#include "kernels/device/sync.h"

namespace braid::kernels::device {

// Unrolls the loop that follows: nvcc's pragma on the GPU, GCC's and Clang's on the host. nvcc's
// host pass (whose loops run nowhere) gets none: its front end and the host compiler behind it
// each know only one of the two spellings.
#if defined(__CUDA_ARCH__)
#define BRAID_UNROLL _Pragma("unroll")
#elif defined(__CUDACC__)
#define BRAID_UNROLL
#elif defined(__clang__)
#define BRAID_UNROLL _Pragma("unroll")
#else
#define BRAID_UNROLL _Pragma("GCC unroll 16")
#endif

// The data loops are functions of their own on the GPU: one body per dtype and op, called from
// every step of every schedule, instead of an inlined copy at each call site (a kernel holds all
// schedules, and inlined copies of the unrolled loops made it spill).
#if defined(__CUDACC__)
#define BRAID_DEVICE_LOOP inline __host__ __device__ __noinline__
#else
#define BRAID_DEVICE_LOOP inline
#endif

/// Packs each thread issues before it waits for the first: 4 x 16 bytes, as NCCL's Simple
/// protocol keeps in flight per thread.
inline constexpr int kUnroll = 4;

/// 16 bytes, the widest load or store a thread can issue.
struct alignas(16) Pack16 {
  std::uint64_t lo, hi;
};

BRAID_DEVICE_FN Pack16 loadPack(const void* from) {
#if defined(__CUDA_ARCH__)
  // asm volatile keeps the loads in program order among the primitives' acquire loads (which
  // are asm volatile too) and issues the unrolled ones back to back.
  Pack16 v;
  asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %2; ld.global.v2.u64 {%0, %1}, [g]; }"
               : "=l"(v.lo), "=l"(v.hi)
               : "l"(from)
               : "memory");
  return v;
#else
  // A GPU faults on a misaligned 16-byte access; the emulation stops as hard.
  if ((reinterpret_cast<std::uintptr_t>(from) & 15) != 0) __builtin_trap();
  Pack16 v;
  __builtin_memcpy(&v, from, sizeof(v));
  return v;
#endif
}

BRAID_DEVICE_FN void storePack(void* to, const Pack16& v) {
#if defined(__CUDA_ARCH__)
  asm volatile(
      "{ .reg .u64 g; cvta.to.global.u64 g, %0; st.global.v2.u64 [g], {%1, %2}; }" ::"l"(to),
      "l"(v.lo), "l"(v.hi)
      : "memory");
#else
  if ((reinterpret_cast<std::uintptr_t>(to) & 15) != 0) __builtin_trap();
  __builtin_memcpy(to, &v, sizeof(v));
#endif
}

/// `p` advanced by `bytes`, nullptr staying nullptr.
BRAID_DEVICE_FN char* advance(void* p, std::size_t bytes) {
  return p == nullptr ? nullptr : static_cast<char*>(p) + bytes;
}
BRAID_DEVICE_FN const char* advance(const void* p, std::size_t bytes) {
  return p == nullptr ? nullptr : static_cast<const char*>(p) + bytes;
}

BRAID_DEVICE_FN std::uintptr_t misalignment(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) & 15;
}

/// Whether every given pointer (nullptr: not given) has misalignment `m`.
BRAID_DEVICE_FN bool allAt(std::uintptr_t m, const void* a, const void* b, const void* c) {
  return (a == nullptr || misalignment(a) == m) && (b == nullptr || misalignment(b) == m) &&
         (c == nullptr || misalignment(c) == m);
}

/// dst[i] (and dst2[i]) = src[i] for `packs` packs, by the block's threads, kUnroll in flight.
BRAID_DEVICE_FN void copyPacks(const Block& b, char* dst, char* dst2, const char* src,
                               std::size_t packs) {
  const std::size_t threads = static_cast<std::size_t>(b.threads);
  std::size_t i = static_cast<std::size_t>(b.thread);
  for (; i + (kUnroll - 1) * threads < packs; i += kUnroll * threads) {
    Pack16 v[kUnroll];
    BRAID_UNROLL
    for (int k = 0; k < kUnroll; ++k) v[k] = loadPack(src + 16 * (i + k * threads));
    BRAID_UNROLL
    for (int k = 0; k < kUnroll; ++k) {
      storePack(dst + 16 * (i + k * threads), v[k]);
      if (dst2 != nullptr) storePack(dst2 + 16 * (i + k * threads), v[k]);
    }
  }
  for (; i < packs; i += threads) {
    const Pack16 v = loadPack(src + 16 * i);
    storePack(dst + 16 * i, v);
    if (dst2 != nullptr) storePack(dst2 + 16 * i, v);
  }
}

/// Bytes [from, to) of src to dst (and dst2), one byte per thread and step.
BRAID_DEVICE_FN void copyEachByte(const Block& b, char* dst, char* dst2, const char* src,
                                  std::size_t from, std::size_t to) {
  for (std::size_t i = from + b.thread; i < to; i += b.threads) {
    const char v = src[i];
    dst[i] = v;
    if (dst2 != nullptr) dst2[i] = v;
  }
}

/// dst (and dst2 when given) = src, `bytes` bytes, by the block's threads: packs where the three
/// share their misalignment, single bytes around them (and everywhere when they do not).
BRAID_DEVICE_LOOP void copyBytes(const Block& b, void* dst, void* dst2, const void* src,
                                 std::size_t bytes) {
  char* d = static_cast<char*>(dst);
  char* d2 = static_cast<char*>(dst2);
  const char* s = static_cast<const char*>(src);
  if (d == s && d2 == nullptr) return;
  const std::uintptr_t m = misalignment(s);
  if (!allAt(m, d, d2, nullptr)) return copyEachByte(b, d, d2, s, 0, bytes);
  const std::size_t head = (16 - m) % 16 < bytes ? (16 - m) % 16 : bytes;
  const std::size_t packs = (bytes - head) / 16;
  copyEachByte(b, d, d2, s, 0, head);
  copyPacks(b, d + head, advance(d2, head), s + head, packs);
  copyEachByte(b, d, d2, s, head + 16 * packs, bytes);
}

/// One unit (a 16-byte pack, or an 8-byte word of the line protocols) of
/// out = post(acc OP pre(local)), element by element.
template <int D, class Op, class Unit>
BRAID_DEVICE_FN Unit reduceUnit(const cuda::ElementParams<D>& p, const Unit& acc,
                                const Unit& local) {
  using S = typename ElementType<D>::Storage;
  constexpr int kElements = sizeof(Unit) / sizeof(S);
  S a[kElements], l[kElements], o[kElements];
  __builtin_memcpy(a, &acc, sizeof(Unit));
  __builtin_memcpy(l, &local, sizeof(Unit));
  BRAID_UNROLL
  for (int k = 0; k < kElements; ++k) o[k] = cuda::ReduceElement<D, Op>::apply(p, a[k], l[k]);
  Unit out;
  __builtin_memcpy(&out, o, sizeof(Unit));
  return out;
}

template <int D, class Op>
BRAID_DEVICE_FN Pack16 reducePack(const cuda::ElementParams<D>& p, const Pack16& acc,
                                  const Pack16& local) {
  return reduceUnit<D, Op>(p, acc, local);
}

/// Packs [0, packs) of out0 (and out1) = post(acc OP pre(local)); acc == nullptr: no operand.
template <int D, class Op>
BRAID_DEVICE_FN void reducePacks(const Block& b, const cuda::ElementParams<D>& p, char* out0,
                                 char* out1, const char* acc, const char* local,
                                 std::size_t packs) {
  const std::size_t threads = static_cast<std::size_t>(b.threads);
  std::size_t i = static_cast<std::size_t>(b.thread);
  const Pack16 none{0, 0};
  for (; i + (kUnroll - 1) * threads < packs; i += kUnroll * threads) {
    Pack16 l[kUnroll], a[kUnroll];
    BRAID_UNROLL
    for (int k = 0; k < kUnroll; ++k) {
      l[k] = loadPack(local + 16 * (i + k * threads));
      a[k] = acc != nullptr ? loadPack(acc + 16 * (i + k * threads)) : none;
    }
    BRAID_UNROLL
    for (int k = 0; k < kUnroll; ++k) {
      const Pack16 v = reducePack<D, Op>(p, a[k], l[k]);
      storePack(out0 + 16 * (i + k * threads), v);
      if (out1 != nullptr) storePack(out1 + 16 * (i + k * threads), v);
    }
  }
  for (; i < packs; i += threads) {
    const Pack16 v = reducePack<D, Op>(p, acc != nullptr ? loadPack(acc + 16 * i) : none,
                                       loadPack(local + 16 * i));
    storePack(out0 + 16 * i, v);
    if (out1 != nullptr) storePack(out1 + 16 * i, v);
  }
}

/// Elements [from, to) one per thread and step.
template <int D, class Op>
BRAID_DEVICE_FN void reduceEachElement(const Block& b, const cuda::ElementParams<D>& p, void* out0,
                                       void* out1, const void* acc, const void* local,
                                       std::size_t from, std::size_t to) {
  using S = typename ElementType<D>::Storage;
  S* o0 = static_cast<S*>(out0);
  S* o1 = static_cast<S*>(out1);
  const S* a = static_cast<const S*>(acc);
  const S* l = static_cast<const S*>(local);
  for (std::size_t i = from + b.thread; i < to; i += b.threads) {
    const S v = cuda::ReduceElement<D, Op>::apply(p, a != nullptr ? a[i] : S{}, l[i]);
    o0[i] = v;
    if (o1 != nullptr) o1[i] = v;
  }
}

/// out0[i] (and out1[i]) = post(acc[i] OP pre(local[i])) for i < n, by the block's threads;
/// acc == nullptr: post(pre(local[i])). Packs where the buffers share their misalignment.
template <int D, class Op>
BRAID_DEVICE_LOOP void reduceElements(const Block& b, const cuda::ElementParams<D>& p, void* out0,
                                      void* out1, const void* acc, const void* local,
                                      std::size_t n) {
  constexpr std::size_t kSize = sizeof(typename ElementType<D>::Storage);
  const std::uintptr_t m = misalignment(local);
  if (m % kSize != 0 || !allAt(m, out0, out1, acc))
    return reduceEachElement<D, Op>(b, p, out0, out1, acc, local, 0, n);
  const std::size_t headElements = (16 - m) % 16 / kSize;
  const std::size_t head = headElements < n ? headElements : n;
  const std::size_t packs = (n - head) * kSize / 16;
  const std::size_t body = packs * 16 / kSize;
  reduceEachElement<D, Op>(b, p, out0, out1, acc, local, 0, head);
  const std::size_t skip = head * kSize;
  reducePacks<D, Op>(b, p, advance(out0, skip), advance(out1, skip), advance(acc, skip),
                     advance(local, skip), packs);
  reduceEachElement<D, Op>(b, p, out0, out1, acc, local, head + body, n);
}

}  // namespace braid::kernels::device
