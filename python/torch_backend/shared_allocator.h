// Shared bucket memory for the PyTorch backend: a c10 CPU allocator that, while a scope is open,
// serves large allocations (DDP's gradient buckets) with ncclMemAlloc, memory the communicator's
// peers on this host can map. ProcessGroupBraid registers such an allocation with its
// communicator (ncclCommRegister, a local call) the first time it all-reduces a tensor inside it,
// so that when every rank's buffer is registered Braid's allreduce takes the one-sided ZeroCopy
// algorithm, reading the peers' buckets where they lie (docs/pytorch.md, "Shared buckets").
//
// Outside a scope, and for allocations under kSharedMinBytes, every call goes to the CPU
// allocator that was installed before this one. The scope is process-wide (a depth counter):
// allocations made by any thread while it is open are eligible. Everything here is thread-safe.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace braid_torch {

/// The smallest allocation served from shared memory: Braid's default ZeroCopy threshold
/// (smaller all-reduces use other algorithms, and every ncclMemAlloc costs a memfd and an mmap).
constexpr size_t kSharedMinBytes = size_t{1} << 20;

/// Opens a scope (nestable); the first call installs the allocator as c10's CPU allocator.
/// False when c10 kept another allocator (one set with a higher priority): the scope is then
/// open but has no effect.
bool enterSharedScope();
/// Closes the innermost scope (a call without an open scope is ignored).
void leaveSharedScope();

/// True when [ptr, ptr + bytes) lies inside one shared allocation and that allocation is (now)
/// registered with `comm`; registers it, once per allocation and communicator, when it was not.
/// False when the range is not shared memory or the registration failed (the allreduce then
/// runs as for any buffer).
bool registerSharedRange(ncclComm_t comm, const void* ptr, size_t bytes);

/// Drops every registration made with `comm` (ncclCommDeregister); call before destroying it.
void forgetComm(ncclComm_t comm);

struct SharedAllocatorStats {
  bool installed = false;    ///< c10's CPU allocator is this one
  int depth = 0;             ///< open scopes
  size_t allocations = 0;    ///< live shared allocations
  size_t bytes = 0;          ///< their total size
  size_t registrations = 0;  ///< live (allocation, communicator) registrations
};
SharedAllocatorStats sharedAllocatorStats();

/// True when [ptr, ptr + bytes) lies inside one live shared allocation.
bool isSharedRange(const void* ptr, size_t bytes);

}  // namespace braid_torch
