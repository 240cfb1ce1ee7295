// Collectives on device buffers as collective kernels, through the NCCL API, on the fake device:
// each launch runs the device protocol's emulation in stream order (every block a thread, the
// code nvcc compiles for the GPU) over the FIFOs the communicator set up in "device memory" and
// exchanged as a GPU's would be (pointers between threads, IPC handles between processes).
// Every element is checked against an exact reference; no host-driven step may move data.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "device/device_runtime.h"
#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"

namespace {

using braid::test::DeviceInts;
using braid::test::expectElements;
using braid::test::fakeDevice;
using braid::test::KernelPath;
using braid::test::RankContext;
using braid::test::RunOptions;
using braid::test::runProcesses;
using braid::test::runThreads;

constexpr int32_t kPoison = braid::test::kDeviceTestPoison;

int32_t input(int rank, size_t i) {
  return braid::test::deviceTestInput(rank, i);
}

using DeviceKernelTest = braid::test::FakeDeviceTest;

RunOptions kernelOptions(std::vector<std::pair<std::string, std::string>> extra = {}) {
  return braid::test::kernelTestOptions(std::move(extra));
}

int32_t wrapMul(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
}

/// Every collective, int32 under every op and float sums of integers, in place and out of place,
/// sizes 0 to 70001 elements.
void everyCollective(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  ASSERT_TRUE(comm->device.channels.ready()) << "the collective kernels were not set up";
  auto& fake = fakeDevice();
  const long launches = fake.kernelLaunches(), hostSteps = fake.deviceOps();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  auto sync = [&] { fake.synchronize(stream); };
  KernelPath path(ctx, stream);
  const int n = ctx.nranks(), me = ctx.rank();
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}, size_t{70001}}) {
    const std::string at = " count " + std::to_string(count);
    const long one = count > 0 ? 1 : 0;  // as NCCL, an empty call launches nothing
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      for (bool inPlace : {false, true}) {
        DeviceInts send(count), recv(count);
        for (size_t i = 0; i < count; ++i) send.data[i] = input(me, i);
        int32_t* out = inPlace ? send.data : recv.data;
        ASSERT_EQ(ncclAllReduce(send.data, out, count, ncclInt32, op, comm, s), ncclSuccess)
            << ncclGetLastError(comm);
        sync();
        path.expect(one, 0, "allreduce op " + std::to_string(op) + at);
        std::vector<int32_t> want(count);
        for (size_t i = 0; i < count; ++i) {
          int64_t sum = 0;
          int32_t v = input(0, i);
          for (int r = 0; r < n; ++r) {
            const int32_t x = input(r, i);
            sum += x;
            if (r == 0) continue;
            v = op == ncclProd  ? wrapMul(v, x)
                : op == ncclMax ? std::max(v, x)
                : op == ncclMin ? std::min(v, x)
                                : v;
          }
          want[i] = op == ncclSum   ? static_cast<int32_t>(sum)
                    : op == ncclAvg ? static_cast<int32_t>(sum / n)
                                    : v;
        }
        expectElements(ctx, out, want,
                       "allreduce op " + std::to_string(op) + (inPlace ? " in place" : "") + at);
      }
    }
    // Float sums of integers: exact in any order.
    {
      auto* f = static_cast<float*>(fake.deviceAlloc(0, count * 4 + 4));
      for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(input(me, i));
      ASSERT_EQ(ncclAllReduce(f, f, count, ncclFloat32, ncclSum, comm, s), ncclSuccess);
      sync();
      path.expect(one, 0, "float allreduce" + at);
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += static_cast<float>(input(r, i));
        if (f[i] != want) {
          ctx.fail("float allreduce" + at + ": element " + std::to_string(i) + " is " +
                   std::to_string(f[i]) + ", expected " + std::to_string(want));
          break;
        }
      }
      fake.deviceFree(f);
    }
    for (int root : {0, n - 1, n / 2}) {
      DeviceInts buf(count);
      if (me == root)
        for (size_t i = 0; i < count; ++i) buf.data[i] = input(root, i);
      ASSERT_EQ(ncclBroadcast(buf.data, buf.data, count, ncclInt32, root, comm, s), ncclSuccess);
      DeviceInts send(count), recv(count);
      for (size_t i = 0; i < count; ++i) send.data[i] = input(me, i);
      ASSERT_EQ(ncclReduce(send.data, recv.data, count, ncclInt32, ncclMax, root, comm, s),
                ncclSuccess);
      sync();
      path.expect(2 * one, 0, "broadcast and reduce, root " + std::to_string(root) + at);
      std::vector<int32_t> bcast(count), max(count);
      for (size_t i = 0; i < count; ++i) {
        bcast[i] = input(root, i);
        max[i] = input(0, i);
        for (int r = 1; r < n; ++r) max[i] = std::max(max[i], input(r, i));
      }
      const std::string from = " root " + std::to_string(root) + at;
      expectElements(ctx, buf.data, bcast, "broadcast" + from);
      if (me == root) expectElements(ctx, recv.data, max, "reduce" + from);
      if (me != root)  // a non-root's receive buffer is not written
        expectElements(ctx, recv.data, std::vector<int32_t>(count, kPoison), "reduce" + from);
    }
    for (bool inPlace : {false, true}) {
      DeviceInts big(count * n), small(count);
      int32_t* mine = inPlace ? big.data + me * count : small.data;
      for (size_t i = 0; i < count; ++i) mine[i] = input(me, i);
      ASSERT_EQ(ncclAllGather(mine, big.data, count, ncclInt32, comm, s), ncclSuccess);
      DeviceInts whole(count * n), part(count);
      for (size_t i = 0; i < count * n; ++i) whole.data[i] = input(me, i);
      int32_t* out = inPlace ? whole.data + me * count : part.data;
      ASSERT_EQ(ncclReduceScatter(whole.data, out, count, ncclInt32, ncclSum, comm, s),
                ncclSuccess);
      sync();
      path.expect(2 * one, 0,
                  std::string("allgather and reducescatter") + (inPlace ? " in place" : "") + at);
      std::vector<int32_t> gathered(count * n), block(count, 0);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) {
          gathered[r * count + i] = input(r, i);
          block[i] += input(r, me * count + i);
        }
      const std::string how = (inPlace ? " in place" : "") + at;
      expectElements(ctx, big.data, gathered, "allgather" + how);
      expectElements(ctx, out, block, "reducescatter" + how);
    }
  }
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comm);
  EXPECT_EQ(fake.deviceOps(), hostSteps) << "a host-driven step moved data";
  EXPECT_GT(fake.kernelLaunches(), launches);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, EveryCollectiveThreads) {
  for (int n : {1, 2, 3, 5})
    BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, everyCollective, kernelOptions()));
}

TEST_F(DeviceKernelTest, EveryCollectiveProcesses) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, everyCollective, kernelOptions()));
}

// Each schedule and protocol forced, at odd and even rank counts.
TEST_F(DeviceKernelTest, EveryScheduleAndProtocol) {
  const std::vector<std::pair<std::string, std::string>> forced[] = {
      {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "Simple"}},
      {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL"}},
      {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "Simple"}},
      {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL"}},
      {{"NCCL_ALGO", "OneShot"}, {"NCCL_PROTO", "LL"}},
      {{"NCCL_ALGO", "OneShot"}, {"NCCL_PROTO", "Simple"}},
      {{"NCCL_ALGO", "Ring"}, {"NCCL_PROTO", "LL128"}},
      {{"NCCL_ALGO", "Tree"}, {"NCCL_PROTO", "LL128"}},
      {{"NCCL_ALGO", "OneShot"}, {"NCCL_PROTO", "LL128"}},
  };
  for (const auto& env : forced)
    for (int n : {2, 3})
      BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, everyCollective, kernelOptions(env)))
          << env[0].second << "/" << env[1].second;
}

// A group's collectives of one type and op are one launch: five int32 all-reduces and an
// all-gather share a launch, a float all-reduce takes another; every result exact.
void groupIsOneLaunch(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  const int n = ctx.nranks(), me = ctx.rank();
  const size_t counts[5] = {1, 13, 1031, 4099, 20011};
  std::vector<std::unique_ptr<DeviceInts>> bufs;
  for (size_t c : counts) {
    bufs.push_back(std::make_unique<DeviceInts>(c));
    for (size_t i = 0; i < c; ++i) bufs.back()->data[i] = input(me, i + c);
  }
  DeviceInts mine(777), gathered(777 * n);
  for (size_t i = 0; i < 777; ++i) mine.data[i] = input(me, i);
  auto* f = static_cast<float*>(fake.deviceAlloc(0, 999 * 4));
  for (size_t i = 0; i < 999; ++i) f[i] = static_cast<float>(input(me, i));
  const long launches = fake.kernelLaunches(), items = fake.launchedCollectives();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (auto& b : bufs)
    ASSERT_EQ(ncclAllReduce(b->data, b->data, b->count, ncclInt32, ncclSum, comm, s), ncclSuccess);
  ASSERT_EQ(ncclAllGather(mine.data, gathered.data, 777, ncclInt32, comm, s), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(f, f, 999, ncclFloat32, ncclSum, comm, s), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
  fake.synchronize(stream);
  for (size_t k = 0; k < 5; ++k) {
    std::vector<int32_t> want(counts[k], 0);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < counts[k]; ++i) want[i] += input(r, i + counts[k]);
    expectElements(ctx, bufs[k]->data, want, "grouped allreduce " + std::to_string(k));
  }
  std::vector<int32_t> all(777 * n);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < 777; ++i) all[r * 777 + i] = input(r, i);
  expectElements(ctx, gathered.data, all, "grouped allgather");
  for (size_t i = 0; i < 999; ++i) {
    float want = 0;
    for (int r = 0; r < n; ++r) want += static_cast<float>(input(r, i));
    if (f[i] != want) {
      ctx.fail("grouped float allreduce: element " + std::to_string(i));
      break;
    }
  }
  fake.deviceFree(f);
  // Per rank: one launch for the six int32 collectives, one for the float one (the counters
  // are the process's: every thread rank adds its own).
  if (ctx.shape() == braid::test::RankShape::kProcesses) {
    EXPECT_EQ(fake.kernelLaunches() - launches, 2);
    EXPECT_EQ(fake.launchedCollectives() - items, 7);
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, AGroupIsOneLaunchPerTypeAndOp) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(3, groupIsOneLaunch, kernelOptions()));
  const long launches = fakeDevice().kernelLaunches(), items = fakeDevice().launchedCollectives();
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, groupIsOneLaunch, kernelOptions()));
  EXPECT_EQ(fakeDevice().kernelLaunches() - launches, 2 * 2);
  EXPECT_EQ(fakeDevice().launchedCollectives() - items, 2 * 7);
}

TEST_F(DeviceKernelTest, AGroupIsOneLaunchPerTypeAndOpProcesses) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, groupIsOneLaunch, kernelOptions()));
}

// A communicator's launches run in the order they were issued, whatever streams they name: the
// second call (on another stream) reads what the first (on a held stream) writes.
void issueOrderAcrossStreams(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  auto& fake = fakeDevice();
  void* first = fake.createStream(0);
  void* second = fake.createStream(0);
  const size_t count = 5003;
  DeviceInts a(count), b(count), c(count);
  for (size_t i = 0; i < count; ++i) a.data[i] = input(ctx.rank(), i);
  fake.hold(first);
  ASSERT_EQ(ncclAllReduce(a.data, b.data, count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(first)),
            ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data, c.data, count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(second)),
            ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(c.data[0], kPoison) << "the second call ran before the first";
  fake.release(first);
  fake.synchronize(second);
  std::vector<int32_t> want(count);
  for (size_t i = 0; i < count; ++i) {
    int32_t sum = 0;
    for (int r = 0; r < ctx.nranks(); ++r) sum += input(r, i);
    want[i] = sum * ctx.nranks();
  }
  expectElements(ctx, c.data, want, "second call");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, LaunchesRunInIssueOrderAcrossStreams) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(3, issueOrderAcrossStreams, kernelOptions()));
}

void allReduceInPlace(RankContext& ctx, ncclComm_t comm, size_t count, const std::string& what) {
  void* stream = fakeDevice().createStream(0);
  DeviceInts buf(count);
  for (size_t i = 0; i < count; ++i) buf.data[i] = input(ctx.rank(), i);
  ASSERT_EQ(ncclAllReduce(buf.data, buf.data, count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(stream)),
            ncclSuccess);
  fakeDevice().synchronize(stream);
  std::vector<int32_t> want(count, 0);
  for (int r = 0; r < ctx.nranks(); ++r)
    for (size_t i = 0; i < count; ++i) want[i] += input(r, i);
  expectElements(ctx, buf.data, want, what);
}

// BRAID_DEVICE_KERNELS=0: no kernel FIFOs, host-driven steps over the P2P transport instead.
void kernelsOff(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(comm->team.overP2p);
  EXPECT_FALSE(comm->device.channels.ready());
  auto& fake = fakeDevice();
  const long launches = fake.kernelLaunches(), hostSteps = fake.deviceOps();
  allReduceInPlace(ctx, comm, 1031, "allreduce without kernels");
  EXPECT_EQ(fake.kernelLaunches(), launches);
  EXPECT_GT(fake.deviceOps(), hostSteps);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, KernelsCanBeTurnedOff) {
  BRAID_EXPECT_ALL_RANKS_OK(
      runThreads(2, kernelsOff, kernelOptions({{"BRAID_DEVICE_KERNELS", "0"}})));
}

// ncclMemAlloc returns memory of the current device, as NCCL's (nccl-tests -R, PyTorch's NCCL
// memory pool), and a collective kernel runs on it.
TEST_F(DeviceKernelTest, MemAllocReturnsMemoryOfTheCurrentDevice) {
  auto& fake = fakeDevice();
  for (int device : {0, 1}) {
    fake.setCurrentDevice(device);
    void* p = nullptr;
    ASSERT_EQ(ncclMemAlloc(&p, 4099), ncclSuccess) << ncclGetLastError(nullptr);
    const braid::MemoryPlace where = fake.place(p);
    EXPECT_EQ(where.kind, braid::MemoryKind::kDevice);
    EXPECT_EQ(where.device, device);
    EXPECT_EQ(ncclMemFree(p), ncclSuccess);
    // Freed, the block stays with the pool (freeing device memory would wait for every kernel
    // of the process, a peer rank's included) and the next allocation of its size class on
    // this device takes it back; another device's does not.
    EXPECT_EQ(fake.place(p).kind, braid::MemoryKind::kDevice) << "the freed block was released";
    void* again = nullptr;
    ASSERT_EQ(ncclMemAlloc(&again, 5000), ncclSuccess);
    EXPECT_EQ(again, p);
    fake.setCurrentDevice(1 - device);
    void* other = nullptr;
    ASSERT_EQ(ncclMemAlloc(&other, 4099), ncclSuccess);
    EXPECT_NE(other, p);
    EXPECT_EQ(fake.place(other).device, 1 - device);
    EXPECT_EQ(ncclMemFree(other), ncclSuccess);
    fake.setCurrentDevice(device);
    EXPECT_EQ(ncclMemFree(again), ncclSuccess);
  }
  fake.setCurrentDevice(0);
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        ASSERT_NE(comm, nullptr);
        int32_t* buf = nullptr;
        ASSERT_EQ(ncclMemAlloc(reinterpret_cast<void**>(&buf), 1000 * 4), ncclSuccess);
        for (int i = 0; i < 1000; ++i) buf[i] = input(ctx.rank(), i);
        void* stream = fakeDevice().createStream(0);
        const long launches = fakeDevice().kernelLaunches();
        ASSERT_EQ(ncclAllReduce(buf, buf, 1000, ncclInt32, ncclSum, comm,
                                static_cast<cudaStream_t>(stream)),
                  ncclSuccess);
        fakeDevice().synchronize(stream);
        EXPECT_GT(fakeDevice().kernelLaunches(), launches);
        std::vector<int32_t> want(1000);
        for (int i = 0; i < 1000; ++i) want[i] = input(0, i) + input(1, i);
        expectElements(ctx, buf, want, "allreduce on ncclMemAlloc memory");
        EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      kernelOptions()));
  // Without devices: host memory, as before.
  braid::setDeviceRuntime(&braid::noDeviceRuntime());
  void* host = nullptr;
  ASSERT_EQ(ncclMemAlloc(&host, 64), ncclSuccess);
  static_cast<char*>(host)[63] = 1;
  EXPECT_EQ(ncclMemFree(host), ncclSuccess);
  braid::setDeviceRuntime(&fakeDevice());
}

// A driver older than the runtime is an error at init naming it, not "no device" (which would
// send device pointers down the host path).
TEST_F(DeviceKernelTest, ATooOldDriverFailsInitNamingIt) {
  fakeDevice().setDriverTooOld(true);
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(1, [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    const ncclUniqueId id = ctx.id();
    EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclUnhandledCudaError);
    const std::string e = ncclGetLastError(nullptr);
    EXPECT_NE(e.find("older than the CUDA runtime"), std::string::npos) << e;
  }));
  fakeDevice().setDriverTooOld(false);
}

// A peer's memory that cannot be mapped (a refused IPC open) is no failure: every rank stages
// device buffers through the host instead, with the same results.
void mappingRefused(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr) << "init failed";
  EXPECT_FALSE(comm->team.overP2p);
  EXPECT_FALSE(comm->device.channels.ready());
  auto& fake = fakeDevice();
  const int staging = fake.stagingAllocations();
  allReduceInPlace(ctx, comm, 5003, "staged allreduce after a refused mapping");
  EXPECT_GT(fake.stagingAllocations(), staging);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, ARefusedMappingStagesThroughTheHostProcesses) {
  fakeDevice().setFailOpen(true);
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, mappingRefused, kernelOptions()));
  fakeDevice().setFailOpen(false);
}

// Processes on one GPU without MPS would take turns on it: no kernels, host-driven steps, the
// same results.
TEST_F(DeviceKernelTest, ProcessesSharingAGpuWithoutMpsUseHostSteps) {
  fakeDevice().setMps(false);
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(2, kernelsOff, kernelOptions()));
  fakeDevice().setMps(true);
}

}  // namespace
