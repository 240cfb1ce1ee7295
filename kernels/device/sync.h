// The memory-ordering vocabulary of the device protocol, one spelling for both targets.
//
// The protocol (kernels/device/*.h) is compiled by nvcc for the GPU, where a block of threads
// runs one channel of one rank, and by the host compiler for the emulation, where every block of
// every rank is a CPU thread. Everything the blocks of different ranks share goes through the
// functions here: acquire loads and release stores of 64-bit words at system scope (a peer may
// be another GPU or the host), relaxed ones for the LL lines (whose data and flag travel in one
// word), and a pause between polls. On the host they are std::atomic_ref operations, so
// ThreadSanitizer checks the emulation's orderings (C++20's atomic_ref takes no const type,
// hence the casts on loads); on the GPU they are the PTX instructions of the same meaning
// (sm_70 and later).
#pragma once

#include <chrono>
#include <cstdint>

#include "kernels/ops.h"

#if !defined(__CUDA_ARCH__)
#include <atomic>
#include <thread>
#endif

namespace braid::kernels::device {

#if defined(__CUDACC__)
#define BRAID_DEVICE_FN __host__ __device__ __forceinline__
#else
#define BRAID_DEVICE_FN inline
#endif

BRAID_DEVICE_FN std::uint64_t loadAcquire(const std::uint64_t* word) {
#if defined(__CUDA_ARCH__)
  std::uint64_t value;
  asm volatile("ld.acquire.sys.u64 %0, [%1];" : "=l"(value) : "l"(word) : "memory");
  return value;
#else
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(*word))
      .load(std::memory_order_acquire);
#endif
}

BRAID_DEVICE_FN void storeRelease(std::uint64_t* word, std::uint64_t value) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.release.sys.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
#else
  std::atomic_ref<std::uint64_t>(*word).store(value, std::memory_order_release);
#endif
}

BRAID_DEVICE_FN std::uint64_t loadRelaxed(const std::uint64_t* word) {
#if defined(__CUDA_ARCH__)
  std::uint64_t value;
  asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(value) : "l"(word) : "memory");
  return value;
#else
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(*word))
      .load(std::memory_order_relaxed);
#endif
}

BRAID_DEVICE_FN void storeRelaxed(std::uint64_t* word, std::uint64_t value) {
#if defined(__CUDA_ARCH__)
  asm volatile("st.relaxed.sys.u64 [%0], %1;" ::"l"(word), "l"(value) : "memory");
#else
  std::atomic_ref<std::uint64_t>(*word).store(value, std::memory_order_relaxed);
#endif
}

/// Orders every earlier write of the block's threads (after a Block::sync) before the release
/// store that publishes them: NCCL's __threadfence_system before a flag. On the host one thread
/// runs the block, and the release store alone orders its writes.
BRAID_DEVICE_FN void fenceBeforePublish() {
#if defined(__CUDA_ARCH__)
  __threadfence_system();
#endif
}

/// Between two polls of a word another block writes.
BRAID_DEVICE_FN void pause(unsigned polls) {
#if defined(__CUDA_ARCH__)
  if (polls > 1024) __nanosleep(polls > 65536 ? 1000 : 100);
#else
  // The emulation runs more blocks than cores: a poller that does not give its core away
  // starves the block it waits for.
  (void)polls;
  std::this_thread::yield();
#endif
}

/// Nanoseconds of a clock that every block of the device shares (the GPU's global timer; the
/// host's steady clock in the emulation), for the waits' timeout.
BRAID_DEVICE_FN std::uint64_t nowNs() {
#if defined(__CUDA_ARCH__)
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
#else
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
#endif
}

/// The threads that run one channel: a CUDA block, or one CPU thread in the emulation.
struct Block {
  int thread = 0;   ///< this thread's index in the block
  int threads = 1;  ///< the block's size
  BRAID_DEVICE_FN void sync() const {
#if defined(__CUDA_ARCH__)
    __syncthreads();
#endif
  }
  BRAID_DEVICE_FN bool leader() const {
    return thread == 0;
  }
};

}  // namespace braid::kernels::device
