// The runtime registry and the runtime without devices (device_runtime.h).
#include "device/device_runtime.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "util/settings.h"
#include "util/status.h"

namespace braid {
namespace {

class NoDeviceRuntime final : public DeviceRuntime {
 public:
  const char* name() const override { return "none"; }
  int deviceCount() override { return 0; }
  ncclResult_t currentDevice(int* device) override {
    *device = -1;
    return ncclSuccess;
  }
  MemoryPlace place(const void*) override { return {}; }
  ncclResult_t streamDevice(void*, int* device) override {
    *device = -1;
    return ncclSuccess;
  }
  ncclResult_t streamCapturing(void*, bool* capturing) override {
    *capturing = false;
    return ncclSuccess;
  }
  ncclResult_t copyAsync(void*, const void*, size_t, void*) override {
    return fail(ncclInvalidUsage, "no CUDA device: device copies are unavailable");
  }
  ncclResult_t hostWorkAsync(void*, std::function<void()>) override {
    return fail(ncclInvalidUsage, "no CUDA device: CUDA streams are unavailable");
  }
  void* allocStaging(size_t bytes) override { return std::malloc(bytes ? bytes : 1); }
  void freeStaging(void* p, void*) override { std::free(p); }
};

std::atomic<DeviceRuntime*> installed{nullptr};

ncclResult_t noPeerMemory(const char* what) {
  return fail(ncclInvalidUsage, "the %s device runtime has no %s", deviceRuntime().name(), what);
}

}  // namespace

ncclResult_t DeviceRuntime::enablePeerAccess(int device, int peer) {
  return device == peer ? ncclSuccess : noPeerMemory("peer access");
}
ncclResult_t DeviceRuntime::allocDevice(int, size_t, void**) {
  return noPeerMemory("device allocation");
}
ncclResult_t DeviceRuntime::exportMemory(void*, IpcHandle*) {
  return noPeerMemory("memory export");
}
ncclResult_t DeviceRuntime::openMemory(int, const IpcHandle&, void**) {
  return noPeerMemory("memory import");
}
ncclResult_t DeviceRuntime::reduce(int, const kernels::ReduceOp&, void*, void*, const void*,
                                   const void*, size_t, unsigned) {
  return noPeerMemory("device reduction");
}
ncclResult_t DeviceRuntime::copy(int, void*, void*, const void*, size_t) {
  return noPeerMemory("device copy");
}
ncclResult_t DeviceRuntime::read(int, void*, const void*, size_t) {
  return noPeerMemory("device read");
}

ncclResult_t DeviceRuntime::upload(int, void*, const void*, size_t) {
  return noPeerMemory("device upload");
}
void* DeviceRuntime::allocMapped(size_t bytes) {
  return std::calloc(1, bytes ? bytes : 1);
}
void DeviceRuntime::freeMapped(void* p) {
  std::free(p);
}
ncclResult_t DeviceRuntime::residentKernelBlocks(int, int* blocks) {
  *blocks = 0;
  return ncclSuccess;
}
ncclResult_t DeviceRuntime::launchCollective(int, const kernels::device::LaunchArgs&, int*, void*) {
  return noPeerMemory("collective kernel");
}
ncclResult_t DeviceRuntime::launchSendRecv(int, const kernels::device::P2pLaunchArgs&, int*, int,
                                           void*) {
  return noPeerMemory("point-to-point kernel");
}
ncclResult_t DeviceRuntime::streamWaitChain(int, void*, void* chain) {
  return chain ? noPeerMemory("stream chaining") : ncclSuccess;
}
ncclResult_t DeviceRuntime::recordChain(int, void*, void**) {
  return noPeerMemory("stream chaining");
}
ncclResult_t DeviceRuntime::waitChain(void* after) {
  return after ? noPeerMemory("stream chaining") : ncclSuccess;
}

DeviceRuntime& noDeviceRuntime() {
  static NoDeviceRuntime runtime;
  return runtime;
}

#if !defined(BRAID_WITH_CUDA)
DeviceRuntime* cudaDeviceRuntime() {
  return nullptr;
}
#endif

DeviceRuntime& deviceRuntime() {
  if (DeviceRuntime* r = installed.load(std::memory_order_acquire)) return *r;
  // BRAID_CUDA_DISABLE=1 keeps a CUDA build off the GPU (the host path never asks CUDA).
  static DeviceRuntime* const builtIn = [] {
    DeviceRuntime* cuda = settingInt(Setting::kCudaDisable) == 1 ? nullptr : cudaDeviceRuntime();
    return cuda ? cuda : &noDeviceRuntime();
  }();
  return *builtIn;
}

void setDeviceRuntime(DeviceRuntime* runtime) {
  installed.store(runtime, std::memory_order_release);
}

}  // namespace braid
