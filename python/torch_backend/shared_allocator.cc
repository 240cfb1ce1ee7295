#include "shared_allocator.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>

namespace braid_torch {

namespace {

struct Allocation {
  size_t bytes = 0;
  std::vector<std::pair<ncclComm_t, void*>> registrations;  ///< (communicator, handle)
};

// Never destroyed: tensors may be freed during interpreter shutdown, after static destructors.
struct State {
  std::atomic<int> depth{0};
  std::once_flag installOnce;
  std::atomic<bool> installed{false};
  c10::Allocator* previous = nullptr;
  c10::DeleterFnPtr previousRawDeleter = nullptr;
  std::mutex mutex;                             ///< guards allocations
  std::map<uintptr_t, Allocation> allocations;  ///< by start address
};

State& state() {
  static State* s = new State();
  return *s;
}

// The allocation holding [p, p + bytes), or end(); the caller holds the mutex.
std::map<uintptr_t, Allocation>::iterator findContaining(State& s, const void* ptr, size_t bytes) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = s.allocations.upper_bound(p);
  if (it == s.allocations.begin()) return s.allocations.end();
  --it;
  if (p + bytes > it->first + it->second.bytes) return s.allocations.end();
  return it;
}

// Releases a shared allocation: its registrations first (under the mutex, so that a process
// group being destroyed never sees its communicator deregistered twice or after it is gone),
// then the memory. False when `ptr` is not the start of a shared allocation.
bool releaseShared(void* ptr) {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.allocations.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == s.allocations.end()) return false;
    for (auto& [comm, handle] : it->second.registrations) (void)ncclCommDeregister(comm, handle);
    s.allocations.erase(it);
  }
  (void)ncclMemFree(ptr);
  return true;
}

void sharedDelete(void* ptr) {
  releaseShared(ptr);
}

// raw_deallocate may be handed memory from either allocator.
void rawDelete(void* ptr) {
  if (!releaseShared(ptr)) state().previousRawDeleter(ptr);
}

// PyTorch 2.x made allocate() non-const and added copy_data().
#if BRAID_TORCH_MAJOR >= 2
#define BRAID_ALLOCATE_CONST
#else
#define BRAID_ALLOCATE_CONST const
#endif

class SharedCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) BRAID_ALLOCATE_CONST override {
    State& s = state();
    if (n >= kSharedMinBytes && s.depth.load(std::memory_order_acquire) > 0) {
      void* p = nullptr;
      if (ncclMemAlloc(&p, n) == ncclSuccess) {
        {
          std::lock_guard<std::mutex> lock(s.mutex);
          s.allocations[reinterpret_cast<uintptr_t>(p)] = Allocation{n, {}};
        }
        return {p, p, &sharedDelete, c10::Device(c10::DeviceType::CPU)};
      }
      // No shared memory to be had (memfd refused, limits): plain memory, the slower path.
    }
    return s.previous->allocate(n);
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return state().previousRawDeleter ? &rawDelete : nullptr;
  }

#if BRAID_TORCH_MAJOR >= 2
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#endif
};

SharedCpuAllocator& allocatorInstance() {
  static SharedCpuAllocator* a = new SharedCpuAllocator();
  return *a;
}

void install() {
  State& s = state();
  SharedCpuAllocator* mine = &allocatorInstance();
  s.previous = c10::GetCPUAllocator();
  s.previousRawDeleter = s.previous->raw_deleter();
  // Priority 0 is the default allocator's own: equal priority replaces it, and an allocator
  // someone installed with a higher one stays (installed then reports false).
  c10::SetCPUAllocator(mine, 0);
  s.installed = c10::GetCPUAllocator() == mine;
}

}  // namespace

bool enterSharedScope() {
  State& s = state();
  std::call_once(s.installOnce, install);
  s.depth.fetch_add(1, std::memory_order_acq_rel);
  return s.installed.load();
}

void leaveSharedScope() {
  State& s = state();
  int d = s.depth.load();
  while (d > 0 && !s.depth.compare_exchange_weak(d, d - 1)) {
  }
}

bool registerSharedRange(ncclComm_t comm, const void* ptr, size_t bytes) {
  if (!comm || !ptr || bytes == 0) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = findContaining(s, ptr, bytes);
  if (it == s.allocations.end()) return false;
  Allocation& a = it->second;
  for (const auto& reg : a.registrations)
    if (reg.first == comm) return true;
  void* handle = nullptr;
  if (ncclCommRegister(comm, reinterpret_cast<void*>(it->first), a.bytes, &handle) != ncclSuccess)
    return false;
  a.registrations.emplace_back(comm, handle);
  return true;
}

void forgetComm(ncclComm_t comm) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (auto& [start, a] : s.allocations) {
    std::erase_if(a.registrations, [comm](const std::pair<ncclComm_t, void*>& reg) {
      if (reg.first != comm) return false;
      (void)ncclCommDeregister(reg.first, reg.second);
      return true;
    });
  }
}

SharedAllocatorStats sharedAllocatorStats() {
  State& s = state();
  SharedAllocatorStats st;
  st.installed = s.installed.load() && c10::GetCPUAllocator() == &allocatorInstance();
  st.depth = s.depth.load();
  std::lock_guard<std::mutex> lock(s.mutex);
  for (const auto& [start, a] : s.allocations) {
    st.allocations++;
    st.bytes += a.bytes;
    st.registrations += a.registrations.size();
  }
  return st;
}

bool isSharedRange(const void* ptr, size_t bytes) {
  if (!ptr) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return findContaining(s, ptr, bytes) != s.allocations.end();
}

}  // namespace braid_torch
