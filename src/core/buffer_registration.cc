#include "core/buffer_registration.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/shared_memory.h"
#include "util/status.h"

namespace braid {

RegistrationTable::~RegistrationTable() {
  for (auto& [key, m] : mapped_) munmap(m.base, m.bytes);
}

Registration* RegistrationTable::add(const void* base, size_t bytes, bool window, int winFlags) {
  auto r = std::make_unique<Registration>();
  r->base = static_cast<const char*>(base);
  r->bytes = bytes;
  r->window = window;
  r->winFlags = winFlags;
  std::lock_guard<std::mutex> lock(mutex_);
  registrations_.push_back(std::move(r));
  return registrations_.back().get();
}

bool RegistrationTable::remove(const void* r, bool window) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = registrations_.begin(); it != registrations_.end(); ++it) {
    if (it->get() != r || (*it)->window != window) continue;
    registrations_.erase(it);
    return true;
  }
  return false;
}

BufferDescriptor RegistrationTable::describe(const void* ptr, size_t bytes) const {
  BufferDescriptor d;
  const char* p = static_cast<const char*>(ptr);
  d.address = reinterpret_cast<uintptr_t>(p);
  d.pid = getpid();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& r : registrations_)
      if (p >= r->base && p + bytes <= r->base + r->bytes) d.registered = 1;
  }
  if (auto s = findSharedSegment(ptr, bytes); s && s->fd >= 0) {
    d.uid = s->uid;
    d.fd = s->fd;
    d.offset = static_cast<uint64_t>(p - s->base);
    d.segmentBytes = s->bytes;
  }
  return d;
}

ncclResult_t RegistrationTable::resolve(int peer, const BufferDescriptor& d, size_t bytes,
                                        bool sameProcess, const char** out) {
  if (sameProcess) {
    *out = reinterpret_cast<const char*>(static_cast<uintptr_t>(d.address));
    return ncclSuccess;
  }
  if (d.fd < 0 || d.offset > d.segmentBytes || bytes > d.segmentBytes - d.offset)
    return fail(ncclInternalError,
                "rank %d's buffer (fd %d, offset %llu, %zu bytes) is not in shareable memory", peer,
                d.fd, static_cast<unsigned long long>(d.offset), bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = std::make_pair(peer, d.fd);
  auto it = mapped_.find(key);
  if (it != mapped_.end() && (it->second.uid != d.uid || it->second.bytes != d.segmentBytes)) {
    munmap(it->second.base, it->second.bytes);  // the peer freed it: the descriptor was reused
    mapped_.erase(it);
    it = mapped_.end();
  }
  if (it == mapped_.end()) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", d.pid, d.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
      return fail(ncclSystemError, "cannot open rank %d's registered memory through %s: %s", peer,
                  path, strerror(errno));
    void* p = mmap(nullptr, d.segmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
      return fail(ncclSystemError, "mmap of rank %d's registered memory (%llu bytes): %s", peer,
                  static_cast<unsigned long long>(d.segmentBytes), strerror(e));
    it = mapped_.emplace(key, Mapped{d.uid, static_cast<char*>(p), d.segmentBytes}).first;
  }
  *out = it->second.base + d.offset;
  return ncclSuccess;
}

}  // namespace braid
