#include "core/shared_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "util/status.h"

namespace braid {
namespace {

std::mutex segmentsMutex;
// By base address, so a pointer's segment is the last one starting at or below it.
std::map<const char*, SharedSegment>& segments() {
  static auto* s = new std::map<const char*, SharedSegment>;  // outlives static destructors
  return *s;
}

}  // namespace

ncclResult_t sharedAlloc(size_t bytes, void** ptr) {
  if (!ptr) return fail(ncclInvalidArgument, "ptr is NULL");
  if (bytes == 0) return fail(ncclInvalidArgument, "size is 0");
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - page) return fail(ncclInvalidArgument, "size %zu is too large", bytes);
  SharedSegment s;
  s.bytes = (bytes + page - 1) / page * page;
  static std::atomic<uint64_t> allocations{0};
  s.uid = ++allocations;
  s.fd = memfd_create("braid-mem", MFD_CLOEXEC);
  if (s.fd >= 0 && ftruncate(s.fd, static_cast<off_t>(s.bytes)) != 0) {
    int e = errno;
    close(s.fd);
    return fail(ncclSystemError, "ncclMemAlloc of %zu bytes: ftruncate: %s", bytes, strerror(e));
  }
  // Without memfd (old kernel, seccomp) the memory is still shared-mapped but stays private to
  // this process: collectives then stage through the FIFOs as with unregistered memory.
  void* p = s.fd >= 0
                ? mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0)
                : mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    if (s.fd >= 0) close(s.fd);
    return fail(ncclSystemError, "ncclMemAlloc of %zu bytes: mmap: %s", bytes, strerror(e));
  }
  s.base = static_cast<char*>(p);
  {
    std::lock_guard<std::mutex> lock(segmentsMutex);
    segments()[s.base] = s;
  }
  *ptr = p;
  return ncclSuccess;
}

ncclResult_t sharedFree(void* ptr) {
  if (!ptr) return ncclSuccess;  // as free(NULL)
  SharedSegment s;
  {
    std::lock_guard<std::mutex> lock(segmentsMutex);
    auto it = segments().find(static_cast<const char*>(ptr));
    if (it == segments().end())
      return fail(ncclInvalidArgument,
                  "ptr %p was not returned by ncclMemAlloc (or was freed already)", ptr);
    s = it->second;
    segments().erase(it);
  }
  munmap(s.base, s.bytes);
  if (s.fd >= 0) close(s.fd);
  return ncclSuccess;
}

std::optional<SharedSegment> findSharedSegment(const void* ptr, size_t bytes) {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard<std::mutex> lock(segmentsMutex);
  auto it = segments().upper_bound(p);
  if (it == segments().begin()) return std::nullopt;
  --it;
  const SharedSegment& s = it->second;
  if (p < s.base || p + bytes > s.base + s.bytes) return std::nullopt;
  return s;
}

}  // namespace braid
