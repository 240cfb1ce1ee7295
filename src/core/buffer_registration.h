// User buffer registration (ncclCommRegister, ncclCommWindowRegister) and what zero-copy
// collectives need from it: a description of a buffer that a peer turns into its own pointer.
// Registration is local, as in NCCL: a collective learns whether every rank registered its buffers
// from the descriptors the ranks exchange at its start (allreduce_zerocopy.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "nccl.h"

namespace braid {

/// One registered range; ncclCommRegister's handle and ncclWindow_t point at one. Handles are
/// checked by identity against the table, never read before that.
struct Registration {
  const char* base = nullptr;
  size_t bytes = 0;
  bool window = false;  ///< made by ncclCommWindowRegister (collective, sizes checked)
  int winFlags = 0;
};

/// How a peer finds one of this rank's buffers.
struct BufferDescriptor {
  uint64_t address = 0;       ///< in the owner's address space
  uint64_t uid = 0;           ///< ncclMemAlloc allocation id (0: not from ncclMemAlloc)
  uint64_t offset = 0;        ///< from the allocation's start
  uint64_t segmentBytes = 0;  ///< the allocation's length
  int32_t pid = 0;
  int32_t fd = -1;          ///< memfd in the owner (-1: other processes cannot map it)
  uint32_t registered = 0;  ///< 1: the range lies in a registration of this communicator
  uint32_t reserved = 0;
};

class RegistrationTable {
 public:
  RegistrationTable() = default;
  RegistrationTable(const RegistrationTable&) = delete;
  RegistrationTable& operator=(const RegistrationTable&) = delete;
  ~RegistrationTable();  ///< forgets every registration and unmaps peers' memory

  Registration* add(const void* base, size_t bytes, bool window, int winFlags);
  /// False when `r` is not a registration of this table (of the kind asked for).
  bool remove(const void* r, bool window);
  /// This rank's buffer [ptr, ptr + bytes) as peers need to see it.
  BufferDescriptor describe(const void* ptr, size_t bytes) const;
  /// A peer's described buffer of `bytes` in this process: its own address when the peer shares
  /// the process, else the peer's allocation mapped here (cached until the peer reuses its
  /// descriptor for another allocation, or the communicator goes).
  ncclResult_t resolve(int peer, const BufferDescriptor& d, size_t bytes, bool sameProcess,
                       const char** out);

 private:
  struct Mapped {
    uint64_t uid;
    char* base;
    size_t bytes;
  };
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Registration>> registrations_;
  std::map<std::pair<int, int32_t>, Mapped> mapped_;  ///< by (peer, the peer's memfd number)
};

}  // namespace braid
