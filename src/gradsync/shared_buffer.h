// Bucket memory that the communicator's peers on this host can read where it lies: allocated
// with ncclMemAlloc (shared memory) and registered with the communicator (ncclCommRegister), so
// a bucket's allreduce takes the zero-copy path, with no FIFO slot between the ranks, whenever
// every rank's bucket is registered (docs/gradsync.md). Plain aligned memory where shared memory
// cannot be had; the allreduce then goes through the FIFOs as for any buffer.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace braid::gradsync {

class SharedBuffer {
 public:
  SharedBuffer() = default;
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer();
  /// Zeroed, 64-byte aligned memory for `bytes` (throws std::bad_alloc when none can be had).
  void allocate(ncclComm_t comm, size_t bytes);
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  /// True when the memory is shared and registered with the communicator.
  bool registered() const { return handle_ != nullptr; }

 private:
  void release();
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  bool shared_ = false;
  ncclComm_t comm_ = nullptr;
  void* handle_ = nullptr;
};

}  // namespace braid::gradsync
