// ncclMemAlloc's pool of device memory (device_pool.h).
#include "core/device_pool.h"

#include "device/device_runtime.h"
#include "util/status.h"

namespace braid {

DevicePool& DevicePool::instance() {
  static DevicePool* const pool = new DevicePool;  // outlives static destructors
  return *pool;
}

size_t DevicePool::sizeClass(size_t bytes) {
  constexpr size_t kSmall = size_t{1} << 20, kLarge = size_t{2} << 20;
  if (bytes > kSmall) return (bytes + kLarge - 1) / kLarge * kLarge;
  size_t c = 512;
  while (c < bytes) c *= 2;
  return c;
}

ncclResult_t DevicePool::alloc(DeviceRuntime& runtime, int device, size_t bytes, void** p) {
  const size_t size = sizeClass(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  const Key key{&runtime, device, size};
  if (auto it = idle_.find(key); it != idle_.end()) {
    *p = it->second;
    idle_.erase(it);
    live_[*p] = Block{&runtime, device, size};
    return ncclSuccess;
  }
  if (runtime.allocDevice(device, size, p) != ncclSuccess) {
    // The device may be full of blocks this pool holds idle: give them back and try once more.
    releaseIdle(runtime, device);
    if (ncclResult_t r = runtime.allocDevice(device, size, p); r != ncclSuccess) return r;
  }
  live_[*p] = Block{&runtime, device, size};
  return ncclSuccess;
}

bool DevicePool::free(void* p) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(p);
  if (it == live_.end()) return false;
  const Block b = it->second;
  live_.erase(it);
  idle_.emplace(Key{b.runtime, b.device, b.bytes}, p);
  return true;
}

size_t DevicePool::idleBlocks() {
  std::lock_guard<std::mutex> lock(mutex_);
  return idle_.size();
}

void DevicePool::releaseIdle(DeviceRuntime& runtime, int device) {
  for (auto it = idle_.begin(); it != idle_.end();) {
    if (std::get<0>(it->first) == &runtime && std::get<1>(it->first) == device) {
      runtime.freeDevice(it->second);
      it = idle_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace braid
