// Reduction and copy kernels over device memory: the entry points the device path calls. Same
// contract as kernels/reduce.h (kernels::reduce and kernels::copy), enqueued on a CUDA stream.
// This header needs no CUDA header: streams travel as void* (a cudaStream_t) and errors as the
// cudaError_t value (0 = cudaSuccess).
#pragma once

#include <cstddef>

#include "kernels/reduce.h"

namespace braid::kernels::cuda {

/// Enqueues out0[i] = post(acc[i] OP pre(local[i])) for i < count on `stream`, with the
/// semantics of kernels::reduce: acc may be nullptr, out1 may be nullptr, out0/out1 may alias
/// acc or local exactly. All pointers are device memory of the current device. Returns the
/// launch's cudaError_t (0 on success); an invalid dtype or op returns cudaErrorInvalidValue.
int reduceAsync(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                std::size_t count, unsigned flags, void* stream);

/// Enqueues out0 = src and, when out1 != nullptr, out1 = src (one read, two writes).
int copyAsync(void* out0, void* out1, const void* src, std::size_t bytes, void* stream);

/// The launch shape reduceAsync uses for `count` elements of `elementSize` bytes on a device
/// with `multiprocessors` SMs (exposed for the tests and the benchmark).
struct LaunchShape {
  unsigned blocks;
  unsigned threads;
};
LaunchShape launchShape(std::size_t count, std::size_t elementSize, int multiprocessors);

}  // namespace braid::kernels::cuda
