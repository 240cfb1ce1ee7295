// The fake device runtime (fake_device_runtime.h).
#include "tests/device/fake_device_runtime.h"

#include <cstdlib>
#include <cstring>

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
  std::lock_guard<std::mutex> lock(mutex_);
  const char* c = static_cast<const char*>(p);
  auto it = allocations_.upper_bound(c);
  if (it == allocations_.begin()) return {};
  --it;
  if (c >= it->first + it->second.first) return {};
  return {MemoryKind::kDevice, it->second.second};
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
  push(stream, [dst, src, bytes] { std::memcpy(dst, src, bytes); });
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::hostWorkAsync(void* stream, std::function<void()> work) {
  push(stream, std::move(work));
  return ncclSuccess;
}

void* FakeDeviceRuntime::allocStaging(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++stagingAllocations_;
  return std::malloc(bytes);
}

void FakeDeviceRuntime::freeStaging(void* p) {
  std::free(p);
}

}  // namespace braid::test
