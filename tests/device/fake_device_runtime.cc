// The fake device runtime (fake_device_runtime.h).
#include "tests/device/fake_device_runtime.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/status.h"

namespace braid::test {
namespace {
thread_local int currentDeviceOfThread = 0;
}

FakeDeviceRuntime::~FakeDeviceRuntime() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (auto& [handle, s] : streams_) {
    s->stop = true;
    s->changed.notify_all();
  }
  for (auto& [handle, s] : streams_) {
    lock.unlock();
    s->thread.join();
    lock.lock();
  }
  for (auto& [start, info] : allocations_) std::free(const_cast<char*>(start));
  for (auto& [start, m] : mappings_) {
    munmap(const_cast<char*>(start), m.bytes);
    if (m.fd >= 0) close(m.fd);
  }
}

void FakeDeviceRuntime::setCurrentDevice(int device) {
  currentDeviceOfThread = device;
}

void* FakeDeviceRuntime::deviceAlloc(int device, size_t bytes) {
  char* p = static_cast<char*>(std::malloc(bytes ? bytes : 1));
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_[p] = {bytes ? bytes : 1, device};
  return p;
}

void FakeDeviceRuntime::deviceFree(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(static_cast<const char*>(p));
  if (it == allocations_.end()) return;
  std::free(p);
  allocations_.erase(it);
}

void* FakeDeviceRuntime::createStream(int device) {
  auto s = std::make_unique<Stream>();
  s->device = device;
  Stream* raw = s.get();
  std::lock_guard<std::mutex> lock(mutex_);
  streams_[raw] = std::move(s);
  raw->thread = std::thread([this, raw] { run(raw); });
  return raw;
}

FakeDeviceRuntime::Stream* FakeDeviceRuntime::find(void* stream) {
  if (stream == nullptr) {
    const int device = currentDeviceOfThread;
    auto it = defaultStreams_.find(device);
    if (it != defaultStreams_.end()) return static_cast<Stream*>(it->second);
    auto s = std::make_unique<Stream>();
    s->device = device;
    Stream* raw = s.get();
    streams_[raw] = std::move(s);
    raw->thread = std::thread([this, raw] { run(raw); });
    defaultStreams_[device] = raw;
    return raw;
  }
  auto it = streams_.find(stream);
  return it == streams_.end() ? nullptr : it->second.get();
}

void FakeDeviceRuntime::run(Stream* s) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    s->changed.wait(lock, [&] { return s->stop || (!s->held && !s->work.empty()); });
    if (s->stop) return;
    std::function<void()> work = std::move(s->work.front());
    s->work.pop_front();
    lock.unlock();
    work();
    lock.lock();
    ++s->done;
    s->changed.notify_all();
  }
}

void FakeDeviceRuntime::push(void* stream, std::function<void()> work) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stream* s = find(stream);
  s->work.push_back(std::move(work));
  ++s->queued;
  s->changed.notify_all();
}

void FakeDeviceRuntime::synchronize(void* stream) {
  std::unique_lock<std::mutex> lock(mutex_);
  Stream* s = find(stream);
  const size_t target = s->queued;
  s->changed.wait(lock, [&] { return s->done >= target; });
}

void FakeDeviceRuntime::hold(void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  find(stream)->held = true;
}

void FakeDeviceRuntime::release(void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stream* s = find(stream);
  s->held = false;
  s->changed.notify_all();
}

void FakeDeviceRuntime::setCapturing(void* stream, bool capturing) {
  std::lock_guard<std::mutex> lock(mutex_);
  find(stream)->capturing = capturing;
}

ncclResult_t FakeDeviceRuntime::currentDevice(int* device) {
  *device = currentDeviceOfThread;
  return ncclSuccess;
}

MemoryPlace FakeDeviceRuntime::place(const void* p) {
  const int device = deviceOf(p, 1);
  if (device >= 0) return {MemoryKind::kDevice, device};
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  if (auto it = pinned_.upper_bound(c); it != pinned_.begin() && c < (--it)->first + it->second)
    return {MemoryKind::kPinned, -1};
  return {};
}

void* FakeDeviceRuntime::pinnedAlloc(size_t bytes) {
  char* p = static_cast<char*>(std::malloc(bytes ? bytes : 1));
  std::lock_guard<std::mutex> lock(mutex_);
  pinned_[p] = bytes ? bytes : 1;
  return p;
}

void FakeDeviceRuntime::pinnedFree(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pinned_.erase(static_cast<const char*>(p)) == 1) std::free(p);
}

ncclResult_t FakeDeviceRuntime::streamDevice(void* stream, int* device) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stream* s = find(stream);
  if (!s) return fail(ncclInvalidArgument, "fake: unknown stream %p", stream);
  *device = s->device;
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::streamCapturing(void* stream, bool* capturing) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stream* s = find(stream);
  if (!s) return fail(ncclInvalidArgument, "fake: unknown stream %p", stream);
  *capturing = s->capturing;
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_[stream].stagedBytes += static_cast<long>(bytes);
  }
  push(stream, [dst, src, bytes] { std::memcpy(dst, src, bytes); });
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::hostWorkAsync(void* stream, std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_[stream].hostWork++;
  }
  push(stream, std::move(work));
  return ncclSuccess;
}

void* FakeDeviceRuntime::allocStaging(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stagingAllocations_;
  return std::malloc(bytes);
}

void FakeDeviceRuntime::freeStaging(void* p, void*) {
  std::free(p);
}

}  // namespace braid::test

namespace braid::test {
namespace {

// A fake IPC handle: the exporting process and the memfd that backs the allocation.
struct FakeHandle {
  uint64_t magic;
  int32_t pid;
  int32_t fd;
  uint64_t bytes;
  int32_t device;
};
constexpr uint64_t kFakeHandleMagic = 0x66616b652d697063ull;  // "fake-ipc"

}  // namespace

FakeDeviceRuntime& fakeDevice() {
  static FakeDeviceRuntime fake(2);
  return fake;
}

int FakeDeviceRuntime::deviceOf(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  if (auto it = allocations_.upper_bound(c); it != allocations_.begin()) {
    --it;
    if (c + bytes <= it->first + it->second.first) return it->second.second;
  }
  if (auto it = mappings_.upper_bound(c); it != mappings_.begin()) {
    --it;
    if (c + bytes <= it->first + it->second.bytes) return it->second.device;
  }
  return -1;
}

uint64_t FakeDeviceRuntime::deviceIdentity(int device) {
  return device >= 0 && device < devices_ ? 0xfa4e'0000ull + static_cast<uint64_t>(device) + 1 : 0;
}

bool FakeDeviceRuntime::canAccessPeer(int device, int peer) {
  return device >= 0 && peer >= 0 && device < devices_ && peer < devices_;
}

ncclResult_t FakeDeviceRuntime::enablePeerAccess(int device, int peer) {
  if (!canAccessPeer(device, peer))
    return fail(ncclInvalidUsage, "fake: device %d cannot reach device %d", device, peer);
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::allocDevice(int device, size_t bytes, void** p) {
  const int fd = memfd_create("braid-fake-device", MFD_CLOEXEC);
  if (fd < 0) return fail(ncclSystemError, "fake: memfd_create: %s", strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return fail(ncclSystemError, "fake: ftruncate %zu: %s", bytes, strerror(errno));
  }
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    close(fd);
    return fail(ncclSystemError, "fake: mmap %zu: %s", bytes, strerror(errno));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  mappings_[static_cast<const char*>(m)] = {bytes, device, fd};
  *p = m;
  return ncclSuccess;
}

void FakeDeviceRuntime::freeDevice(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = mappings_.find(static_cast<const char*>(p));
  if (it == mappings_.end()) return;
  munmap(p, it->second.bytes);
  if (it->second.fd >= 0) close(it->second.fd);
  mappings_.erase(it);
}

ncclResult_t FakeDeviceRuntime::exportMemory(void* p, IpcHandle* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = mappings_.find(static_cast<const char*>(p));
  if (it == mappings_.end() || it->second.fd < 0)
    return fail(ncclInvalidArgument, "fake: %p is not memory of allocDevice", p);
  FakeHandle h{kFakeHandleMagic, getpid(), it->second.fd, it->second.bytes, it->second.device};
  static_assert(sizeof(h) <= sizeof(handle->bytes));
  memset(handle->bytes, 0, sizeof(handle->bytes));
  memcpy(handle->bytes, &h, sizeof(h));
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::openMemory(int, const IpcHandle& handle, void** p) {
  FakeHandle h;
  memcpy(&h, handle.bytes, sizeof(h));
  if (h.magic != kFakeHandleMagic) return fail(ncclInvalidArgument, "fake: not a fake handle");
  if (failOpen_) return fail(ncclUnhandledCudaError, "fake: cudaIpcOpenMemHandle refused");
  if (h.pid == getpid())
    return fail(ncclInvalidUsage, "fake: a handle is opened in another process only");
  const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(ncclSystemError, "fake: open %s: %s", path.c_str(), strerror(errno));
  void* m = mmap(nullptr, h.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return fail(ncclSystemError, "fake: mmap: %s", strerror(errno));
  std::lock_guard<std::mutex> lock(mutex_);
  mappings_[static_cast<const char*>(m)] = {h.bytes, h.device, -1};
  openedMappings_++;
  *p = m;
  return ncclSuccess;
}

void FakeDeviceRuntime::closeMemory(void* p) {
  freeDevice(p);
}

ncclResult_t FakeDeviceRuntime::reduce(int device, const kernels::ReduceOp& op, void* out0,
                                       void* out1, const void* acc, const void* local, size_t count,
                                       unsigned flags) {
  const size_t bytes = count * kernels::typeSize(op.dtype);
  if (bytes == 0) return ncclSuccess;  // as a kernel over no elements: the pointers are not read
  for (const void* p : {static_cast<const void*>(out0), static_cast<const void*>(out1), acc, local})
    if (p && deviceOf(p, bytes) < 0)
      return fail(ncclInternalError,
                  "fake: device %d reduction given %p (out0 %p out1 %p acc %p local %p, %zu "
                  "bytes), not device memory",
                  device, p, out0, out1, acc, local, bytes);
  kernels::reduce(op, out0, out1, acc, local, count, flags);
  deviceOps_++;
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::copy(int device, void* out0, void* out1, const void* src,
                                     size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  for (const void* p : {static_cast<const void*>(out0), static_cast<const void*>(out1), src})
    if (p && deviceOf(p, bytes) < 0)
      return fail(ncclInternalError, "fake: device %d copy given %p, not device memory", device, p);
  kernels::copy(out0, out1, src, bytes);
  deviceOps_++;
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::read(int device, void* host, const void* src, size_t bytes) {
  if (deviceOf(src, bytes) < 0)
    return fail(ncclInternalError, "fake: device %d read given %p, not device memory", device, src);
  std::memcpy(host, src, bytes);
  return ncclSuccess;
}

}  // namespace braid::test
