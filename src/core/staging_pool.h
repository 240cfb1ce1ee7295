// Page-locked host memory a communicator stages device buffers through (calls on device
// buffers over shm or TCP), one block per stream: calls on one stream run in order, so a
// stream's block is reused by each call once the previous call's outputs are copied out.
#pragma once

#include <cstddef>
#include <vector>

namespace braid {

class DeviceRuntime;

class StagingPool {
 public:
  StagingPool() = default;
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;
  ~StagingPool();
  /// A block of at least `bytes` for `stream`; a larger need replaces the stream's block (the
  /// old one is kept until destruction, since work already queued may still use it). nullptr
  /// when `bytes` is 0 or the allocation fails.
  char* acquire(void* stream, size_t bytes);

 private:
  struct Block {
    void* stream;
    char* data;
    size_t bytes;
    DeviceRuntime* runtime;  ///< the runtime that allocated it, which frees it
  };
  std::vector<Block> current_;
  std::vector<Block> retired_;
};

}  // namespace braid
