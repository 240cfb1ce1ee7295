// ncclMemAlloc on the host: memory that peers on this host can map. Each allocation is an
// anonymous memory file (memfd) mapped shared; its descriptor stays open until ncclMemFree so a
// peer can open /proc/<pid>/fd/<n> and map the same pages, as the shared-memory transport does
// with its FIFOs. Nothing is named in /dev/shm, so a crash leaves nothing behind.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "nccl.h"

namespace braid {

/// One ncclMemAlloc allocation.
struct SharedSegment {
  char* base = nullptr;
  size_t bytes = 0;  ///< mapped length (the request rounded up to pages)
  int fd = -1;       ///< memfd in this process (-1: private memory, not mappable by peers)
  uint64_t uid = 0;  ///< tells this allocation from a later one that reuses the descriptor
};

ncclResult_t sharedAlloc(size_t bytes, void** ptr);
ncclResult_t sharedFree(void* ptr);
/// The allocation holding all of [ptr, ptr + bytes), if ncclMemAlloc made one.
std::optional<SharedSegment> findSharedSegment(const void* ptr, size_t bytes);

}  // namespace braid
