// The fake device's collective kernels and stream chaining (fake_device_runtime.h).
#include <cstring>
#include <memory>

#include "kernels/device/collective.h"
#include "kernels/device/emulation.h"
#include "tests/device/fake_device_runtime.h"
#include "util/status.h"

namespace braid::test {
namespace {

/// A point in a stream's order: its first `position` items.
struct FakeChain {
  void* stream;
  size_t position;
};

}  // namespace

ncclResult_t FakeDeviceRuntime::checkUsable() {
  if (!driverTooOld_) return ncclSuccess;
  return fail(ncclUnhandledCudaError,
              "the CUDA driver (version 12.2) is older than the CUDA runtime Braid was built with "
              "(13.0; driver 580 or newer): GPUs cannot be used (fake)");
}

ncclResult_t FakeDeviceRuntime::upload(int device, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  if (deviceOf(dst, bytes) != device)
    return fail(ncclInternalError, "fake: upload to %p (%zu bytes), not memory of device %d", dst,
                bytes, device);
  std::memcpy(dst, src, bytes);
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::launchCollective(int device,
                                                 const kernels::device::LaunchArgs& launch,
                                                 int* status, void* stream) {
  if (const char* why = kernels::device::unsupported(launch))
    return fail(ncclInternalError, "fake: collective kernel: %s", why);
  // As a GPU's kernel: it reaches device memory only.
  for (int i = 0; i < launch.count; ++i)
    for (const void* p :
         {launch.items[i].sendbuff, static_cast<const void*>(launch.items[i].recvbuff)})
      if (p && deviceOf(p, 1) != device)
        return fail(ncclInternalError, "fake: collective kernel on device %d given %p", device, p);
  kernelLaunches_++;
  launchedItems_ += launch.count;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_[stream].kernelLaunches++;
  }
  push(stream, [launch, status] { kernels::device::runLaunchOnThreads(launch, status); });
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::launchSendRecv(int device,
                                               const kernels::device::P2pLaunchArgs& launch,
                                               int* status, int statusWords, void* stream) {
  if (const char* why = kernels::device::unsupported(launch))
    return fail(ncclInternalError, "fake: point-to-point kernel: %s", why);
  for (int i = 0; i < launch.count; ++i) {
    const kernels::device::P2pItem& it = launch.items[i];
    const void* p = it.isSend ? it.src : it.dst;
    if (it.bytes > 0 && deviceOf(p, it.bytes) != device)
      return fail(ncclInternalError, "fake: point-to-point kernel on device %d given %p", device,
                  p);
  }
  p2pLaunches_++;
  launchedTransfers_ += launch.count;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    paths_[stream].p2pLaunches++;
  }
  // The arguments are large (a kernel parameter of up to 32 KiB): held once, shared.
  auto held = std::make_shared<kernels::device::P2pLaunchArgs>(launch);
  push(stream, [held, status, statusWords] {
    kernels::device::runP2pOnThreads(*held, status, statusWords);
  });
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::recordChain(int, void* stream, void** chain) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stream* s = find(stream);
  if (*chain == nullptr) *chain = new FakeChain{};
  *static_cast<FakeChain*>(*chain) = {s, s->queued};
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::streamWaitChain(int, void* stream, void* chain) {
  if (chain == nullptr) return ncclSuccess;
  const FakeChain at = *static_cast<FakeChain*>(chain);  // as recorded now
  push(stream, [this, at] {
    std::unique_lock<std::mutex> lock(mutex_);
    Stream* s = static_cast<Stream*>(at.stream);
    s->changed.wait(lock, [&] { return s->done >= at.position; });
  });
  return ncclSuccess;
}

ncclResult_t FakeDeviceRuntime::waitChain(void* chain) {
  if (chain == nullptr) return ncclSuccess;
  std::unique_lock<std::mutex> lock(mutex_);
  const FakeChain at = *static_cast<FakeChain*>(chain);
  Stream* s = static_cast<Stream*>(at.stream);
  s->changed.wait(lock, [&] { return s->done >= at.position; });
  return ncclSuccess;
}

void FakeDeviceRuntime::destroyChain(void* chain) {
  delete static_cast<FakeChain*>(chain);
}

}  // namespace braid::test
