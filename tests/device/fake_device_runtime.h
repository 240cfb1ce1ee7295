// A device runtime without a GPU, for the tests of the device path: "device memory" is host
// memory the fake reports as belonging to a device, and each "stream" is an in-order queue run
// by its own thread. A test can hold a stream (nothing on it runs until released) to see that
// calls return before their work has run, and can mark a stream as capturing a graph.
//
// For the P2P transport it has device identities, peer access, and memory another process can
// map: allocDevice makes a memfd mapping whose handle names the process and descriptor, and
// openMemory maps it through /proc, as CUDA IPC maps a peer's allocation. Its reduce and copy
// run the CPU kernels, but only on memory it reports as device memory, and are counted. Its
// collective kernels are the device protocol's emulation (kernels/device/emulation.h): each
// launch runs in stream order, every block a thread, the code nvcc compiles for the GPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "device/device_runtime.h"

namespace braid::test {

class FakeDeviceRuntime final : public DeviceRuntime {
 public:
  explicit FakeDeviceRuntime(int devices = 2) : devices_(devices) {}
  ~FakeDeviceRuntime() override;

  /// `bytes` of memory that place() reports as memory of `device`.
  void* deviceAlloc(int device, size_t bytes);
  void deviceFree(void* p);
  /// Page-locked host memory (cudaHostAlloc): place() reports it as kPinned.
  void* pinnedAlloc(size_t bytes);
  void pinnedFree(void* p);
  /// A stream of `device`; the NULL stream is the current device's default stream.
  void* createStream(int device);
  /// Waits until everything queued on the stream so far has run.
  void synchronize(void* stream);
  /// While held, the stream starts nothing new.
  void hold(void* stream);
  void release(void* stream);
  void setCapturing(void* stream, bool capturing);
  /// The calling thread's current device (as cudaSetDevice).
  static void setCurrentDevice(int device);
  /// Staging blocks allocated so far.
  int stagingAllocations() const { return stagingAllocations_; }
  /// Device reductions and copies run so far (the P2P path's data movement), in this process.
  long deviceOps() const { return deviceOps_.load(); }
  /// Device slots mapped from another process so far (openMemory), in this process.
  int openedMappings() const { return openedMappings_.load(); }

  const char* name() const override { return "fake"; }
  int deviceCount() override { return devices_; }
  ncclResult_t currentDevice(int* device) override;
  MemoryPlace place(const void* p) override;
  ncclResult_t streamDevice(void* stream, int* device) override;
  ncclResult_t streamCapturing(void* stream, bool* capturing) override;
  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void* stream) override;
  ncclResult_t hostWorkAsync(void* stream, std::function<void()> work) override;
  void* allocStaging(size_t bytes) override;
  void freeStaging(void* p, void* stream) override;
  uint64_t deviceIdentity(int device) override;
  bool canAccessPeer(int device, int peer) override;
  ncclResult_t enablePeerAccess(int device, int peer) override;
  ncclResult_t allocDevice(int device, size_t bytes, void** p) override;
  void freeDevice(void* p) override;
  ncclResult_t exportMemory(void* p, IpcHandle* handle) override;
  ncclResult_t openMemory(int device, const IpcHandle& handle, void** p) override;
  void closeMemory(void* p) override;
  ncclResult_t reduce(int device, const kernels::ReduceOp& op, void* out0, void* out1,
                      const void* acc, const void* local, size_t count, unsigned flags) override;
  ncclResult_t copy(int device, void* out0, void* out1, const void* src, size_t bytes) override;
  ncclResult_t read(int device, void* host, const void* src, size_t bytes) override;
  // The collective kernels (fake_device_kernels.cc): a launch runs the device protocol's
  // emulation in stream order, every block a thread, as the GPU runs the same code.
  ncclResult_t upload(int device, void* dst, const void* src, size_t bytes) override;
  ncclResult_t launchCollective(int device, const kernels::device::LaunchArgs& launch, int* status,
                                void* stream) override;
  ncclResult_t launchSendRecv(int device, const kernels::device::P2pLaunchArgs& launch, int* status,
                              int statusWords, void* stream) override;
  ncclResult_t streamWaitChain(int device, void* stream, void* chain) override;
  ncclResult_t recordChain(int device, void* stream, void** chain) override;
  void destroyChain(void* chain) override;
  ncclResult_t waitChain(void* chain) override;
  bool mpsEnabled(int) override { return mps_; }
  /// Makes openMemory fail (an IPC handle another process cannot map).
  void setFailOpen(bool fail) { failOpen_ = fail; }
  /// Plays a driver too old for the runtime: communicator creation fails, naming it.
  void setDriverTooOld(bool tooOld) { driverTooOld_ = tooOld; }
  ncclResult_t checkUsable() override;
  /// Whether processes' kernels on one device run side by side (true unless a test says not).
  void setMps(bool enabled) { mps_ = enabled; }
  /// What residentKernelBlocks answers (0, the default: no known limit, as a runtime without a
  /// GPU), to play a GPU that keeps that many blocks of the kernels resident.
  void setResidentKernelBlocks(int blocks) { residentKernelBlocks_ = blocks; }
  ncclResult_t residentKernelBlocks(int, int* blocks) override {
    *blocks = residentKernelBlocks_.load();
    return ncclSuccess;
  }
  /// What the calls on one stream did so far: kernel launches, bytes staged through host memory
  /// (copies between device and host memory on the stream) and host-driven work queued on it.
  /// Per stream, so each rank's calls are told apart from the other ranks' in one process.
  struct StreamPath {
    long kernelLaunches = 0;
    long p2pLaunches = 0;
    long stagedBytes = 0;
    long hostWork = 0;
  };
  StreamPath pathOf(void* stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    return paths_[stream];
  }
  /// What hardwareQueues answers (0, the default: no limit), to play a process whose streams
  /// reach the GPU through that many queues (CUDA_DEVICE_MAX_CONNECTIONS).
  void setHardwareQueues(int queues) { hardwareQueues_ = queues; }
  int hardwareQueues(int) override { return hardwareQueues_.load(); }
  /// Collective kernels launched so far, in this process.
  long kernelLaunches() const { return kernelLaunches_.load(); }
  /// Collectives those launches ran (a group's share one launch).
  long launchedCollectives() const { return launchedItems_.load(); }
  /// Point-to-point launches (a group's sends and receives in one) and the transfers in them.
  long p2pLaunches() const { return p2pLaunches_.load(); }
  long launchedTransfers() const { return launchedTransfers_.load(); }

 private:
  struct Stream {
    int device = 0;
    bool held = false;
    bool capturing = false;
    bool stop = false;
    size_t queued = 0;
    size_t done = 0;
    std::deque<std::function<void()>> work;
    std::condition_variable changed;
    std::thread thread;
  };
  /// Shared memory standing for device memory another process can map.
  struct Mapping {
    size_t bytes;
    int device;
    int fd;  ///< the memfd of an allocation; -1 for a mapping opened from another process
  };
  Stream* find(void* stream);
  /// The device of the fake device memory holding [p, p + bytes); -1 when it is not any.
  int deviceOf(const void* p, size_t bytes);
  void push(void* stream, std::function<void()> work);
  void run(Stream* s);

  int devices_;
  std::mutex mutex_;  ///< guards everything below and every Stream's fields
  std::map<const char*, std::pair<size_t, int>> allocations_;  ///< start -> (bytes, device)
  std::map<void*, std::unique_ptr<Stream>> streams_;
  std::map<int, void*> defaultStreams_;
  std::map<const char*, Mapping> mappings_;  ///< start -> mapping
  std::map<const char*, size_t> pinned_;     ///< start -> bytes
  std::map<void*, StreamPath> paths_;        ///< stream -> what ran on it
  int stagingAllocations_ = 0;
  std::atomic<long> deviceOps_{0};
  std::atomic<int> openedMappings_{0};
  std::atomic<long> kernelLaunches_{0};
  std::atomic<int> residentKernelBlocks_{0};
  std::atomic<int> hardwareQueues_{0};
  std::atomic<long> launchedItems_{0};
  std::atomic<long> p2pLaunches_{0};
  std::atomic<long> launchedTransfers_{0};
  std::atomic<bool> mps_{true};
  std::atomic<bool> driverTooOld_{false};
  std::atomic<bool> failOpen_{false};
};

/// The fake device of a test program, with two devices (threads share it; processes inherit it
/// at fork).
FakeDeviceRuntime& fakeDevice();

/// Installs fakeDevice() as the process's device runtime for its lifetime (a fixture member).
class FakeDeviceInstalled {
 public:
  FakeDeviceInstalled() { setDeviceRuntime(&fakeDevice()); }
  ~FakeDeviceInstalled() { setDeviceRuntime(nullptr); }
};

}  // namespace braid::test
