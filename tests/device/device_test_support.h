// What the device tests share: each rank's input values (small, so int32 sums stay exact), the
// harness options (a 20 s communicator timeout inside a 90 s run limit; staged: device buffers
// through host memory instead of the P2P transport), poisoned int32 buffers of the fake device,
// and an element-by-element check.
#pragma once

#include <gtest/gtest.h>
#include <cstddef>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "harness/rank_harness.h"
#include "tests/device/fake_device_runtime.h"

namespace braid::test {

inline int32_t deviceTestInput(int rank, size_t i) {
  return static_cast<int32_t>((i * 7919 + static_cast<size_t>(rank) * 104729) % 2001) - 1000;
}

inline RunOptions deviceTestOptions() {
  RunOptions o;
  o.timeoutS = 90;
  o.env = {{"BRAID_TIMEOUT_S", "20"}};
  return o;
}

/// Device buffers staged through the host instead of moved over the P2P transport.
inline RunOptions stagedDeviceTestOptions() {
  RunOptions o = deviceTestOptions();
  o.env.push_back({"NCCL_P2P_DISABLE", "1"});
  return o;
}

/// The collective and point-to-point kernels on small FIFOs (3 channels, 4 KiB Simple slots,
/// 1 KiB LL slots), so that every size of the tests crosses many slots and channels.
inline RunOptions kernelTestOptions(std::vector<std::pair<std::string, std::string>> extra = {}) {
  RunOptions o = deviceTestOptions();
  o.env.push_back({"BRAID_DEVICE_CHANNELS", "3"});
  o.env.push_back({"BRAID_DEVICE_SLOT_BYTES", "4096"});
  o.env.push_back({"BRAID_DEVICE_LL_BYTES", "1024"});
  for (auto& e : extra) o.env.push_back(std::move(e));
  return o;
}

/// A test with the fake device installed for its lifetime.
class FakeDeviceTest : public ::testing::Test {
  FakeDeviceInstalled installed_;
};

constexpr int32_t kDeviceTestPoison = -123456789;

/// A device buffer of int32 (device 0) for one rank: filled, poisoned and read back through host
/// pointers (the fake's device memory is host memory).
struct DeviceInts {
  explicit DeviceInts(size_t n)
      : count(n), data(static_cast<int32_t*>(fakeDevice().deviceAlloc(0, n * 4 + 4))) {
    for (size_t i = 0; i < n; ++i) data[i] = kDeviceTestPoison;
  }
  ~DeviceInts() { fakeDevice().deviceFree(data); }
  DeviceInts(const DeviceInts&) = delete;
  DeviceInts& operator=(const DeviceInts&) = delete;
  size_t count;
  int32_t* data;
};

/// Checks, call by call, which path the calls on one stream took: kernels only - the launches
/// expected, no byte staged through host memory, no host-driven work on the stream. Results alone
/// cannot tell: the fake device's memory is host memory, so a fallback is exact too.
class KernelPath {
 public:
  KernelPath(RankContext& ctx, void* stream)
      : ctx_(ctx), stream_(stream), last_(fakeDevice().pathOf(stream)) {}
  /// Since the last check: `collectives` collective launches and `p2p` point-to-point launches,
  /// nothing else.
  void expect(long collectives, long p2p, const std::string& what) {
    const FakeDeviceRuntime::StreamPath now = fakeDevice().pathOf(stream_);
    const long launched = now.kernelLaunches - last_.kernelLaunches;
    const long p2pLaunched = now.p2pLaunches - last_.p2pLaunches;
    const long staged = now.stagedBytes - last_.stagedBytes;
    const long host = now.hostWork - last_.hostWork;
    if (launched != collectives || p2pLaunched != p2p || staged != 0 || host != 0)
      ctx_.fail(what + ": " + std::to_string(launched) + " collective and " +
                std::to_string(p2pLaunched) + " point-to-point launch(es), " +
                std::to_string(staged) + " bytes staged through host memory, " +
                std::to_string(host) + " host-driven step(s); expected " +
                std::to_string(collectives) + " and " + std::to_string(p2p) +
                " launch(es) and nothing else");
    last_ = now;
  }

 private:
  RankContext& ctx_;
  void* stream_;
  FakeDeviceRuntime::StreamPath last_;
};

inline void expectElements(RankContext& ctx, const int32_t* got, const std::vector<int32_t>& want,
                           const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      ctx.fail(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
               ", expected " + std::to_string(want[i]));
      return;
    }
  }
}

}  // namespace braid::test
