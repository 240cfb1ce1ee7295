#include "core/staging_pool.h"

#include <algorithm>

#include "device/device_runtime.h"

namespace braid {
namespace {

constexpr size_t kStagingAlign = 256;

}  // namespace

StagingPool::~StagingPool() {
  for (const Block& b : current_) b.runtime->freeStaging(b.data, b.stream);
  for (const Block& b : retired_) b.runtime->freeStaging(b.data, b.stream);
}

char* StagingPool::acquire(void* stream, size_t bytes) {
  if (bytes == 0) return nullptr;
  for (Block& b : current_) {
    if (b.stream != stream) continue;
    if (b.bytes >= bytes) return b.data;
    retired_.push_back(b);
    b = current_.back();
    current_.pop_back();
    break;
  }
  DeviceRuntime& rt = deviceRuntime();
  const size_t aligned = (bytes + kStagingAlign - 1) / kStagingAlign * kStagingAlign;
  const size_t size = std::max(aligned, size_t{1} << 20);
  auto* data = static_cast<char*>(rt.allocStaging(size));
  if (!data) return nullptr;
  current_.push_back({stream, data, size, &rt});
  return data;
}

}  // namespace braid
