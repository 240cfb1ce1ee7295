// A device runtime without a GPU, for the tests of the device path: "device memory" is host
// memory the fake reports as belonging to a device, and each "stream" is an in-order queue run
// by its own thread. A test can hold a stream (nothing on it runs until released) to see that
// calls return before their work has run, and can mark a stream as capturing a graph.
#pragma once

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

  const char* name() const override { return "fake"; }
  int deviceCount() override { return devices_; }
  ncclResult_t currentDevice(int* device) override;
  MemoryPlace place(const void* p) override;
  ncclResult_t streamDevice(void* stream, int* device) override;
  ncclResult_t streamCapturing(void* stream, bool* capturing) override;
  ncclResult_t copyAsync(void* dst, const void* src, size_t bytes, void* stream) override;
  ncclResult_t hostWorkAsync(void* stream, std::function<void()> work) override;
  void* allocStaging(size_t bytes) override;
  void freeStaging(void* p) override;

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
  Stream* find(void* stream);
  void push(void* stream, std::function<void()> work);
  void run(Stream* s);

  int devices_;
  std::mutex mutex_;  ///< guards everything below and every Stream's fields
  std::map<const char*, std::pair<size_t, int>> allocations_;  ///< start -> (bytes, device)
  std::map<void*, std::unique_ptr<Stream>> streams_;
  std::map<int, void*> defaultStreams_;
  int stagingAllocations_ = 0;
};

}  // namespace braid::test
