#include "gradsync/shared_buffer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace braid::gradsync {

SharedBuffer::~SharedBuffer() {
  release();
}

void SharedBuffer::release() {
  // The communicator may already be destroyed: deregistering then only reports it.
  if (handle_) (void)ncclCommDeregister(comm_, handle_);
  if (shared_)
    (void)ncclMemFree(data_);
  else
    std::free(data_);
  data_ = nullptr;
  handle_ = nullptr;
  shared_ = false;
}

void SharedBuffer::allocate(ncclComm_t comm, size_t bytes) {
  release();
  constexpr size_t kAlign = 64;  // a cache line: buckets never share one, kernels run aligned
  const size_t rounded = std::max(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  void* p = nullptr;
  if (ncclMemAlloc(&p, rounded) == ncclSuccess) {
    shared_ = true;
    comm_ = comm;
    if (ncclCommRegister(comm, p, rounded, &handle_) != ncclSuccess) handle_ = nullptr;
  } else {
    p = std::aligned_alloc(kAlign, rounded);
    if (!p) throw std::bad_alloc();
  }
  data_ = static_cast<std::byte*>(p);
  std::memset(data_, 0, rounded);
  size_ = bytes;
}

}  // namespace braid::gradsync
