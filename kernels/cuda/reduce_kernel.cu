// The CUDA reduce and copy kernels: one grid-stride kernel per dtype x op, over the element
// definition of kernels/cuda/element.h (and so of kernels/ops.h, shared with the CPU kernels).
//
// Shape of a call: when every pointer has the same offset within 16 bytes, the elements before
// the first 16-byte boundary (the head) and after the last whole 16-byte pack (the tail) are done
// one element per thread, and the body in 16-byte packs with kUnroll packs loaded per thread
// before any is reduced, so several loads are in flight. When the offsets differ, every element
// takes the one-element path (still coalesced). The grid is sized from the multiprocessor count:
// enough blocks to fill the device, never more than the work needs.
//
// Instantiation stays small on purpose: the dtype x op switch (dispatch.h) makes 48 kernels;
// premul, avg, the optional accumulator and the second output are uniform run-time branches (the
// kernels are memory-bound, the branches cost nothing measurable).
#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "kernels/cuda/dispatch.h"
#include "kernels/cuda/element.h"
#include "kernels/cuda/reduce_cuda.h"

namespace braid::kernels::cuda {
namespace {

constexpr unsigned kThreads = 512;
constexpr unsigned kBlocksPerMultiprocessor = 4;
constexpr unsigned kUnroll = 4;  ///< 16-byte packs in flight per thread
constexpr std::size_t kPackBytes = 16;

template <class S>
union Pack {
  uint4 bits;
  S element[kPackBytes / sizeof(S)];
};

template <int D, class Op>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(typename ElementType<D>::Storage* out0, typename ElementType<D>::Storage* out1,
                 const typename ElementType<D>::Storage* acc,
                 const typename ElementType<D>::Storage* local, std::size_t count, std::size_t head,
                 std::size_t packs, ElementParams<D> params) {
  using S = typename ElementType<D>::Storage;
  using R = ReduceElement<D, Op>;
  constexpr std::size_t kPerPack = kPackBytes / sizeof(S);
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t thread = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  const uint4* localPacks = reinterpret_cast<const uint4*>(local + head);
  const uint4* accPacks = acc ? reinterpret_cast<const uint4*>(acc + head) : nullptr;
  uint4* out0Packs = reinterpret_cast<uint4*>(out0 + head);
  uint4* out1Packs = out1 ? reinterpret_cast<uint4*>(out1 + head) : nullptr;
  for (std::size_t first = thread; first < packs; first += stride * kUnroll) {
    Pack<S> right[kUnroll];
    Pack<S> left[kUnroll];
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const std::size_t i = first + u * stride;
      if (i < packs) {
        right[u].bits = localPacks[i];
        left[u].bits = accPacks ? accPacks[i] : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (unsigned u = 0; u < kUnroll; ++u) {
      const std::size_t i = first + u * stride;
      if (i < packs) {
        Pack<S> result;
#pragma unroll
        for (std::size_t k = 0; k < kPerPack; ++k) {
          result.element[k] = R::apply(params, left[u].element[k], right[u].element[k]);
        }
        out0Packs[i] = result.bits;
        if (out1Packs) out1Packs[i] = result.bits;
      }
    }
  }

  // Head and tail, one element per thread: index j < head is a head element, the rest map
  // onto the tail after the body.
  const std::size_t tailStart = head + packs * kPerPack;
  const std::size_t edges = head + (count - tailStart);
  for (std::size_t j = thread; j < edges; j += stride) {
    const std::size_t i = j < head ? j : tailStart + (j - head);
    const S value = R::apply(params, acc ? acc[i] : S{}, local[i]);
    out0[i] = value;
    if (out1) out1[i] = value;
  }
}

/// Multiprocessor count of the current device, read once per device.
int multiprocessors() {
  static std::array<std::atomic<int>, 64> cached{};
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) return 1;
  if (device >= static_cast<int>(cached.size())) device = static_cast<int>(cached.size()) - 1;
  int count = cached[device].load(std::memory_order_relaxed);
  if (count > 0) return count;
  if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      count <= 0) {
    count = 1;
  }
  cached[device].store(count, std::memory_order_relaxed);
  return count;
}

std::size_t offsetIn16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % kPackBytes;
}

template <int D, class Op>
int launch(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
           std::size_t count, unsigned flags, cudaStream_t stream) {
  using S = typename ElementType<D>::Storage;
  const ElementParams<D> params = elementParams<D>(op, acc != nullptr, flags);

  // The body needs every pointer at the same offset within 16 bytes, and that offset a whole
  // number of elements; otherwise the whole call takes the one-element path.
  const std::size_t offset = offsetIn16(local);
  bool packed = offset % sizeof(S) == 0 && offsetIn16(out0) == offset &&
                (!out1 || offsetIn16(out1) == offset) && (!acc || offsetIn16(acc) == offset);
  std::size_t head = count;
  std::size_t packs = 0;
  if (packed) {
    head = offset == 0 ? 0 : (kPackBytes - offset) / sizeof(S);
    if (head > count) head = count;
    packs = (count - head) / (kPackBytes / sizeof(S));
  }
  const LaunchShape shape = launchShape(count, sizeof(S), multiprocessors());
  reduceKernel<D, Op><<<shape.blocks, shape.threads, 0, stream>>>(
      static_cast<S*>(out0), static_cast<S*>(out1), static_cast<const S*>(acc),
      static_cast<const S*>(local), count, head, packs, params);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

LaunchShape launchShape(std::size_t count, std::size_t elementSize, int multiprocessors) {
  const std::size_t bytes = count * elementSize;
  // One thread per kUnroll packs, rounded up to whole blocks, capped at a few blocks per SM.
  const std::size_t threadsNeeded = (bytes + kPackBytes * kUnroll - 1) / (kPackBytes * kUnroll);
  std::size_t blocks = (threadsNeeded + kThreads - 1) / kThreads;
  const std::size_t cap = static_cast<std::size_t>(multiprocessors > 0 ? multiprocessors : 1) *
                          kBlocksPerMultiprocessor;
  if (blocks > cap) blocks = cap;
  if (blocks == 0) blocks = 1;
  return LaunchShape{static_cast<unsigned>(blocks), kThreads};
}

int reduceAsync(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                std::size_t count, unsigned flags, void* stream) {
  if (count == 0) return static_cast<int>(cudaSuccess);
  const auto s = static_cast<cudaStream_t>(stream);
  int error = static_cast<int>(cudaErrorInvalidValue);
  withDtypeAndOp(op.dtype, op.op, [&]<int D, class Op>() {
    error = launch<D, Op>(op, out0, out1, acc, local, count, flags, s);
  });
  return error;
}

int copyAsync(void* out0, void* out1, const void* src, std::size_t bytes, void* stream) {
  if (bytes == 0) return static_cast<int>(cudaSuccess);
  const auto s = static_cast<cudaStream_t>(stream);
  if (out1 == nullptr) {
    return static_cast<int>(cudaMemcpyAsync(out0, src, bytes, cudaMemcpyDeviceToDevice, s));
  }
  // Two destinations: the reduce kernel's pass-through (uint8, no operand, no pre/post) reads
  // the source once and writes both.
  ReduceOp op;
  op.dtype = dtype::kUint8;
  return launch<dtype::kUint8, SumOp>(op, out0, out1, nullptr, src, bytes, 0, s);
}

}  // namespace braid::kernels::cuda
