// ncclMemAlloc's device memory, kept for reuse when freed (ncclMemFree) instead of returned to
// the device.
//
// Why: freeing device memory (cudaFree) waits for every kernel of the process to finish. In a
// program whose ranks are threads of one process, a rank that frees a buffer between two
// collectives would wait for a faster peer's next collective kernel, which waits for this very
// rank's next launch: a hang until the deadline. So a freed block stays with the pool, and an
// allocation of the same size class takes it back. Memory goes back to the device only when an
// allocation finds the device full: the pool then frees that device's idle blocks (nothing of
// the program can be in flight on a block the program freed) and tries once more.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "nccl.h"

namespace braid {

class DeviceRuntime;

class DevicePool {
 public:
  /// The process's pool (never destroyed: blocks may be freed from static destructors).
  static DevicePool& instance();

  /// `bytes` (> 0) of memory of `device` from `runtime`: an idle block of the same size class,
  /// or a new one.
  ncclResult_t alloc(DeviceRuntime& runtime, int device, size_t bytes, void** p);
  /// Takes `p` back if it is a live block of the pool (true); false otherwise.
  bool free(void* p);
  /// The size class of `bytes`: a power of two up to 1 MiB (at least 512 bytes), then whole
  /// 2 MiB, so a block serves any request of its class.
  static size_t sizeClass(size_t bytes);
  /// Idle blocks held (for tests and diagnosis).
  size_t idleBlocks();

 private:
  struct Block {
    DeviceRuntime* runtime;
    int device;
    size_t bytes;
  };
  using Key = std::tuple<DeviceRuntime*, int, size_t>;
  /// Frees `runtime`'s idle blocks of `device`; called with mutex_ held.
  void releaseIdle(DeviceRuntime& runtime, int device);

  std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::multimap<Key, void*> idle_;
};

}  // namespace braid
