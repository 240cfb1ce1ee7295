// The device runtime over CUDA (device_runtime.h). Host work joins a stream's order without
// blocking a CUDA callback thread: the stream records an event and then runs a one-thread kernel
// that waits for a page-locked, device-mapped word; a host thread per stream waits for the event,
// runs the work and writes the word. A callback thread that blocked instead would deadlock two
// ranks of one process whose callbacks CUDA serialises.
#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>

#include "device/cuda_scope.h"
#include "device/device_runtime.h"
#include "kernels/cuda/device_collective.h"
#include "kernels/cuda/reduce_cuda.h"
#include "util/settings.h"
#include "util/status.h"

namespace braid {
namespace {

__global__ void waitForHost(const volatile unsigned* word, unsigned sequence) {
  // Wrap-safe: the host has finished `sequence` once the word reached it.
  while (static_cast<int>(*word - sequence) < 0) __nanosleep(1000);
}

/// The host side of one stream's host work: in order, one at a time.
class StreamWorker {
 public:
  /// Allocates the word and starts the thread (not started when this fails). The thread works
  /// for `device` only: it makes it current once, and touches no other device.
  ncclResult_t init(int device) {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    BRAID_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&word_), sizeof(unsigned),
                                 cudaHostAllocMapped | cudaHostAllocPortable));
    *word_ = 0;
    BRAID_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&deviceWord_), word_, 0));
    thread_ = std::thread([this, device] {
      cudaSetDevice(device);
      relaxCaptureMode();
      loop();
    });
    return ncclSuccess;
  }

  ncclResult_t enqueue(cudaStream_t stream, std::function<void()> work) {
    cudaEvent_t ready;
    BRAID_CUDA_TRY(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    const cudaError_t recorded = cudaEventRecord(ready, stream);
    if (recorded != cudaSuccess) {
      cudaEventDestroy(ready);
      return cudaFail(recorded, "cudaEventRecord");
    }
    const unsigned sequence = ++issued_;
    waitForHost<<<1, 1, 0, stream>>>(deviceWord_, sequence);
    const cudaError_t launched = cudaGetLastError();
    std::lock_guard<std::mutex> lock(mutex_);
    // Queued even when the launch failed, so the sequence stays consistent; the work then runs
    // with nothing waiting for it.
    queue_.push_back({ready, sequence, std::move(work)});
    wake_.notify_one();
    if (launched != cudaSuccess) return cudaFail(launched, "waitForHost<<<>>>");
    return ncclSuccess;
  }

 private:
  struct Item {
    cudaEvent_t ready;
    unsigned sequence;
    std::function<void()> work;
  };

  void loop() {
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return !queue_.empty(); });
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      cudaEventSynchronize(item.ready);
      cudaEventDestroy(item.ready);
      item.work();
      __atomic_store_n(word_, item.sequence, __ATOMIC_RELEASE);
    }
  }

  unsigned* word_ = nullptr;
  unsigned* deviceWord_ = nullptr;
  unsigned issued_ = 0;  ///< touched under the runtime's lock only
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  std::thread thread_;
};

class CudaRuntime final : public DeviceRuntime {
 public:
  const char* name() const override { return "cuda"; }

  int deviceCount() override {
    std::call_once(countOnce_, [this] {
      int n = 0;
      const cudaError_t e = cudaGetDeviceCount(&n);
      if (e != cudaSuccess) {
        cudaGetLastError();
        n = 0;
        // With no driver at all the static runtime says "insufficient driver" too, and the
        // driver's version reads 0: that is a machine without GPUs, not an old driver.
        int driver = 0;
        if (e == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess &&
            driver > 0)
          driverTooOld_ = true;
        cudaGetLastError();
      }
      count_ = n;
    });
    return count_;
  }

  ncclResult_t checkUsable() override {
    deviceCount();
    if (!driverTooOld_) return ncclSuccess;
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    cudaGetLastError();
    return fail(ncclUnhandledCudaError,
                "the CUDA driver (version %d.%d) is older than the CUDA runtime Braid was built "
                "with (%d.%d; driver 580 or newer): GPUs cannot be used. Upgrade the driver, or "
                "set BRAID_CUDA_DISABLE=1 to run on host memory only",
                driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  }

  ncclResult_t currentDevice(int* device) override {
    BRAID_CUDA_TRY(cudaGetDevice(device));
    return ncclSuccess;
  }

  MemoryPlace place(const void* p) override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    switch (attributes.type) {
      case cudaMemoryTypeDevice:
        return {MemoryKind::kDevice, attributes.device};
      case cudaMemoryTypeManaged:
        return {MemoryKind::kManaged, attributes.device};
      case cudaMemoryTypeHost:
        return {MemoryKind::kPinned, -1};
      default:
        return {};
    }
  }

  ncclResult_t streamDevice(void* stream, int* device) override {
    if (stream == nullptr) return currentDevice(device);
    BRAID_CUDA_TRY(cudaStreamGetDevice(static_cast<cudaStream_t>(stream), device));
    return ncclSuccess;
  }

  ncclResult_t streamCapturing(void* stream, bool* capturing) override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    const cudaError_t error = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status);
    if (error == cudaErrorStreamCaptureImplicit) {  // the NULL stream while another captures
      cudaGetLastError();
      *capturing = true;
      return ncclSuccess;
    }
    BRAID_CUDA_TRY(error);
    *capturing = status != cudaStreamCaptureStatusNone;
    return ncclSuccess;
  }

  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void* stream) override {
    BRAID_CUDA_TRY(
        cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
    return ncclSuccess;
  }

  ncclResult_t hostWorkAsync(void* stream, std::function<void()> work) override {
    WorkerKey key;
    BRAID_TRY(keyOf(stream, &key));
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<StreamWorker>& worker = workers_[key];
    if (!worker) {
      worker = std::make_unique<StreamWorker>();
      if (ncclResult_t r = worker->init(key.device); r != ncclSuccess) {
        workers_.erase(key);
        return r;
      }
    }
    return worker->enqueue(static_cast<cudaStream_t>(stream), std::move(work));
  }

  void* allocStaging(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    return p;
  }

  void freeStaging(void* p, void* stream) override {
    // Copies out of the block may still be queued on its stream: that stream only (a device-wide
    // synchronisation would wait for other ranks' kernels, which may be waiting for this one).
    if (cudaStreamSynchronize(static_cast<cudaStream_t>(stream)) != cudaSuccess) cudaGetLastError();
    cudaFreeHost(p);
  }

  uint64_t deviceIdentity(int device) override {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the UUID: the same in every process
    for (char c : prop.uuid.bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return h ? h : 1;
  }

  bool canAccessPeer(int device, int peer) override {
    if (device == peer) return true;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, device, peer) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return can != 0;
  }

  ncclResult_t enablePeerAccess(int device, int peer) override {
    if (device == peer) return ncclSuccess;
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
      return ncclSuccess;
    }
    BRAID_CUDA_TRY(e);
    return ncclSuccess;
  }

  ncclResult_t allocDevice(int device, size_t bytes, void** p) override {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    BRAID_CUDA_TRY(cudaMalloc(p, bytes));
    return ncclSuccess;
  }

  void freeDevice(void* p) override {
    // The caller frees behind a barrier: no peer's copy or kernel uses it any more.
    cudaFree(p);
  }

  ncclResult_t exportMemory(void* p, IpcHandle* handle) override {
    static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(IpcHandle));
    cudaIpcMemHandle_t h;
    BRAID_CUDA_TRY(cudaIpcGetMemHandle(&h, p));
    memcpy(handle->bytes, &h, sizeof(h));
    return ncclSuccess;
  }

  ncclResult_t openMemory(int device, const IpcHandle& handle, void** p) override {
    cudaIpcMemHandle_t h;
    memcpy(&h, handle.bytes, sizeof(h));
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    BRAID_CUDA_TRY(cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess));
    return ncclSuccess;
  }

  void closeMemory(void* p) override {
    // As freeDevice: behind a barrier, after this rank's work on the mapping is done.
    cudaIpcCloseMemHandle(p);
  }

  ncclResult_t reduce(int device, const kernels::ReduceOp& op, void* out0, void* out1,
                      const void* acc, const void* local, size_t count, unsigned flags) override {
    return runOnWorkStream(device, "reduceAsync", [&](cudaStream_t stream) {
      return static_cast<cudaError_t>(
          kernels::cuda::reduceAsync(op, out0, out1, acc, local, count, flags, stream));
    });
  }

  ncclResult_t read(int device, void* host, const void* src, size_t bytes) override {
    return runOnWorkStream(device, "cudaMemcpyAsync", [&](cudaStream_t stream) {
      return cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream);
    });
  }

  ncclResult_t copy(int device, void* out0, void* out1, const void* src, size_t bytes) override {
    return runOnWorkStream(device, "copyAsync", [&](cudaStream_t stream) {
      return static_cast<cudaError_t>(kernels::cuda::copyAsync(out0, out1, src, bytes, stream));
    });
  }

  bool mpsEnabled(int device) override {
    int enabled = 0;
    if (cudaDeviceGetAttribute(&enabled, cudaDevAttrMpsEnabled, device) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return enabled != 0;
  }

  ncclResult_t upload(int device, void* dst, const void* src, size_t bytes) override {
    return runOnWorkStream(device, "cudaMemcpyAsync", [&](cudaStream_t stream) {
      return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
    });
  }

  void* allocMapped(size_t bytes) override {
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocMapped | cudaHostAllocPortable) !=
        cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    memset(p, 0, bytes);
    return p;  // with unified addressing the device reaches it at the same address
  }

  void freeMapped(void* p) override { cudaFreeHost(p); }

  int hardwareQueues(int) override {
    // CUDA's own variable, read as CUDA reads it (its default 8, clamped to 1..32).
    return static_cast<int>(settingInt(Setting::kCudaDeviceMaxConnections));
  }

  ncclResult_t residentKernelBlocks(int device, int* blocks) override {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    BRAID_CUDA_TRY(static_cast<cudaError_t>(kernels::cuda::residentKernelBlocks(device, blocks)));
    return ncclSuccess;
  }

  ncclResult_t launchCollective(int device, const kernels::device::LaunchArgs& launch, int* status,
                                void* stream) override {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    const char* why = nullptr;
    const int e = kernels::cuda::launchCollectives(launch, status, stream, &why);
    if (why != nullptr) return fail(ncclInternalError, "collective kernel: %s", why);
    BRAID_CUDA_TRY(static_cast<cudaError_t>(e));
    return ncclSuccess;
  }

  ncclResult_t launchSendRecv(int device, const kernels::device::P2pLaunchArgs& launch, int* status,
                              int statusWords, void* stream) override {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    const char* why = nullptr;
    const int e = kernels::cuda::launchSendRecv(launch, status, statusWords, stream, &why);
    if (why != nullptr) return fail(ncclInternalError, "point-to-point kernel: %s", why);
    BRAID_CUDA_TRY(static_cast<cudaError_t>(e));
    return ncclSuccess;
  }

  ncclResult_t streamWaitChain(int device, void* stream, void* chain) override {
    if (chain == nullptr) return ncclSuccess;
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    BRAID_CUDA_TRY(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(chain), 0));
    return ncclSuccess;
  }

  ncclResult_t recordChain(int device, void* stream, void** chain) override {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    if (*chain == nullptr) {
      cudaEvent_t e;
      BRAID_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      *chain = e;
    }
    BRAID_CUDA_TRY(
        cudaEventRecord(static_cast<cudaEvent_t>(*chain), static_cast<cudaStream_t>(stream)));
    return ncclSuccess;
  }

  void destroyChain(void* chain) override {
    if (chain) cudaEventDestroy(static_cast<cudaEvent_t>(chain));
  }

  ncclResult_t waitChain(void* chain) override {
    if (chain) BRAID_CUDA_TRY(cudaEventSynchronize(static_cast<cudaEvent_t>(chain)));
    return ncclSuccess;
  }

 private:
  /// The worker of a stream: streams are per device, the NULL stream is the current device's,
  /// and cudaStreamPerThread is a different stream in every thread.
  struct WorkerKey {
    int device;
    void* stream;
    std::thread::id thread;
    bool operator<(const WorkerKey& o) const {
      return std::tie(device, stream, thread) < std::tie(o.device, o.stream, o.thread);
    }
  };

  ncclResult_t keyOf(void* stream, WorkerKey* key) {
    BRAID_TRY(streamDevice(stream, &key->device));
    key->stream = stream;
    key->thread = stream == static_cast<void*>(cudaStreamPerThread) ? std::this_thread::get_id()
                                                                    : std::thread::id{};
    return ncclSuccess;
  }

  /// Enqueues `launch` on the calling thread's work stream of `device` and waits for it, with
  /// the device current only for the call.
  template <typename Launch>
  static ncclResult_t runOnWorkStream(int device, const char* what, Launch launch) {
    DeviceScope scope(device);
    BRAID_CUDA_TRY(scope.error());
    cudaStream_t stream;
    BRAID_TRY(workStream(device, &stream));
    if (const cudaError_t e = launch(stream); e != cudaSuccess) return cudaFail(e, what);
    BRAID_CUDA_TRY(cudaStreamSynchronize(stream));
    return ncclSuccess;
  }

  /// The calling thread's stream on `device` (current) for reduce/copy. Non-blocking: it never
  /// waits for the legacy default stream, which the user's work may be holding.
  static ncclResult_t workStream(int device, cudaStream_t* stream) {
    thread_local std::map<int, cudaStream_t> streams;
    auto it = streams.find(device);
    if (it == streams.end()) {
      cudaStream_t s;
      BRAID_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      it = streams.emplace(device, s).first;
    }
    *stream = it->second;
    return ncclSuccess;
  }

  std::once_flag countOnce_;
  int count_ = 0;
  std::mutex mutex_;
  std::map<WorkerKey, std::unique_ptr<StreamWorker>> workers_;
  bool driverTooOld_ = false;
};

}  // namespace

DeviceRuntime* cudaDeviceRuntime() {
  // Never destroyed: stream workers live as long as the process.
  static CudaRuntime* const runtime = new CudaRuntime;
  return runtime;
}

}  // namespace braid
