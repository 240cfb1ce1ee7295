// Point-to-point on device buffers as kernels, through the NCCL API, on the fake device: a
// group's sends and receives (and AlltoAll, Gather, Scatter) are one launch of the point-to-point
// kernel (kernels/device/p2p.h) run by the emulation in stream order; no host-driven step moves
// data and nothing waits on the host. Every element is checked against an exact reference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/communicator.h"
#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"

namespace braid::test {
namespace {

constexpr int32_t kPoison = kDeviceTestPoison;
constexpr auto input = deviceTestInput;

using DeviceP2pKernelTest = FakeDeviceTest;

/// Small FIFOs, so that the sizes here cross many chunks; LL up to 4 KiB.
RunOptions p2pOptions() {
  return kernelTestOptions({{"NCCL_P2P_LL_THRESHOLD", "4096"}});
}

void everyPointToPoint(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  ASSERT_TRUE(comm->device.channels.ready()) << "the kernels' FIFOs were not set up";
  auto& fake = fakeDevice();
  const long p2pLaunches = fake.p2pLaunches(), hostSteps = fake.deviceOps();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  auto sync = [&] { fake.synchronize(stream); };
  KernelPath path(ctx, stream);
  const int n = ctx.nranks(), me = ctx.rank();
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1031}, size_t{70001}}) {
    const std::string at = " count " + std::to_string(count);
    // A ring: send to the next, receive from the previous, in one group.
    DeviceInts pSend(count), pRecv(count);
    for (size_t i = 0; i < count; ++i) pSend.data[i] = input(me, i);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(pSend.data, count, ncclInt32, (me + 1) % n, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(pRecv.data, count, ncclInt32, (me + n - 1) % n, comm, s), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
    // All-to-all (its block to self included), gather and scatter.
    DeviceInts a2aSend(count * n), a2aRecv(count * n);
    for (size_t i = 0; i < count * n; ++i) a2aSend.data[i] = input(me, i);
    ASSERT_EQ(ncclAlltoAll(a2aSend.data, a2aRecv.data, count, ncclInt32, comm, s), ncclSuccess)
        << ncclGetLastError(comm);
    const int root = n / 2;
    DeviceInts gSend(count), gRecv(count * n), sSend(count * n), sRecv(count);
    for (size_t i = 0; i < count; ++i) gSend.data[i] = input(me, i);
    for (size_t i = 0; i < count * n; ++i) sSend.data[i] = input(me, i);
    ASSERT_EQ(ncclGather(gSend.data, gRecv.data, count, ncclInt32, root, comm, s), ncclSuccess);
    ASSERT_EQ(ncclScatter(sSend.data, sRecv.data, count, ncclInt32, root, comm, s), ncclSuccess);
    sync();
    // One launch each for the ring's group, all-to-all, gather and scatter; nothing else.
    path.expect(0, count > 0 ? 4 : 0, "send/recv, alltoall, gather and scatter" + at);
    std::vector<int32_t> fromPrevious(count), a2a(count * n), gathered(count * n), scattered(count);
    for (size_t i = 0; i < count; ++i) {
      fromPrevious[i] = input((me + n - 1) % n, i);
      scattered[i] = input(root, me * count + i);
    }
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        a2a[r * count + i] = input(r, me * count + i);
        gathered[r * count + i] = input(r, i);
      }
    expectElements(ctx, pRecv.data, fromPrevious, "send/recv ring" + at);
    expectElements(ctx, a2aRecv.data, a2a, "alltoall" + at);
    if (me == root) expectElements(ctx, gRecv.data, gathered, "gather" + at);
    if (me != root)
      expectElements(ctx, gRecv.data, std::vector<int32_t>(count * n, kPoison), "gather" + at);
    expectElements(ctx, sRecv.data, scattered, "scatter" + at);
  }
  // Several messages to one peer in one group arrive in the order posted; a send to self too
  // (on one rank the peer is itself, and the k-th send to self meets the k-th receive).
  if (n > 1) {
    const int next = (me + 1) % n, prev = (me + n - 1) % n;
    DeviceInts a(5), b(3000), self(9), ra(5), rb(3000), rself(9);
    for (size_t i = 0; i < 5; ++i) a.data[i] = input(me, i);
    for (size_t i = 0; i < 3000; ++i) b.data[i] = input(me, 100 + i);
    for (size_t i = 0; i < 9; ++i) self.data[i] = input(me, 7 + i);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(a.data, 5, ncclInt32, next, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(rself.data, 9, ncclInt32, me, comm, s), ncclSuccess);
    ASSERT_EQ(ncclSend(b.data, 3000, ncclInt32, next, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(ra.data, 5, ncclInt32, prev, comm, s), ncclSuccess);
    ASSERT_EQ(ncclSend(self.data, 9, ncclInt32, me, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(rb.data, 3000, ncclInt32, prev, comm, s), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
    sync();
    path.expect(0, 1, "a group of six sends and receives");
    std::vector<int32_t> wa(5), wb(3000), ws(9);
    for (size_t i = 0; i < 5; ++i) wa[i] = input(prev, i);
    for (size_t i = 0; i < 3000; ++i) wb[i] = input(prev, 100 + i);
    for (size_t i = 0; i < 9; ++i) ws[i] = input(me, 7 + i);
    expectElements(ctx, ra.data, wa, "first message from the previous rank");
    expectElements(ctx, rb.data, wb, "second message from the previous rank");
    expectElements(ctx, rself.data, ws, "message to self");
  }
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comm);
  EXPECT_EQ(fake.deviceOps(), hostSteps) << "a host-driven step moved data";
  EXPECT_GT(fake.p2pLaunches(), p2pLaunches);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceP2pKernelTest, EveryPointToPointThreads) {
  for (int n : {1, 2, 3, 5})
    BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, everyPointToPoint, p2pOptions()));
}

TEST_F(DeviceP2pKernelTest, EveryPointToPointProcesses) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, everyPointToPoint, p2pOptions()));
}

// A group's sends and receives are one launch, whatever the peers; under capture they are
// recorded like any kernel (a graph replays them).
void oneLaunchPerGroup(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  const int n = ctx.nranks(), me = ctx.rank();
  DeviceInts send(64 * n), recv(64 * n);
  for (size_t i = 0; i < send.count; ++i) send.data[i] = input(me, i);
  const long before = fake.p2pLaunches(), transfers = fake.launchedTransfers();
  fake.setCapturing(stream, true);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int p = 0; p < n; ++p) {
    ASSERT_EQ(ncclSend(send.data + 64 * p, 64, ncclInt32, p, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv.data + 64 * p, 64, ncclInt32, p, comm, s), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
  fake.setCapturing(stream, false);
  fake.synchronize(stream);
  EXPECT_EQ(fake.p2pLaunches() - before, 1) << "one launch for the group";
  EXPECT_EQ(fake.launchedTransfers() - transfers, 2 * n);
  std::vector<int32_t> want(64 * n);
  for (int p = 0; p < n; ++p)
    for (size_t i = 0; i < 64; ++i) want[64 * p + i] = input(p, 64 * me + i);
  expectElements(ctx, recv.data, want, "a group's exchange with every peer");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceP2pKernelTest, AGroupIsOneLaunchAndCanBeCapturedProcesses) {
  // Processes: the fake's counters are per process (thread ranks' launches would all count).
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, oneLaunchPerGroup, p2pOptions()));
}

// A receive whose size differs from its send: the communicator reports it (ncclInvalidUsage,
// naming the mismatch) instead of hanging or writing a wrong answer.
void sizeMismatch(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  DeviceInts buf(100);
  if (ctx.rank() == 0) {
    ASSERT_EQ(ncclSend(buf.data, 100, ncclInt32, 1, comm, s), ncclSuccess);
  } else {
    ASSERT_EQ(ncclRecv(buf.data, 50, ncclInt32, 0, comm, s), ncclSuccess);
  }
  fake.synchronize(stream);
  if (ctx.rank() == 1) {
    expectElements(ctx, buf.data, std::vector<int32_t>(100, kPoison), "the mismatched receive");
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, ncclInvalidUsage);
    const std::string e = ncclGetLastError(comm);
    EXPECT_NE(e.find("another size"), std::string::npos) << e;
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceP2pKernelTest, ASizeMismatchIsAnErrorNotAHang) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, sizeMismatch, p2pOptions()));
}

// More transfers than one kernel takes: the host-driven steps, still exact.
void hugeGroup(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  const int n = ctx.nranks(), me = ctx.rank();
  constexpr int kMessages = 600;  // 1200 transfers per rank
  DeviceInts send(kMessages), recv(kMessages);
  for (int i = 0; i < kMessages; ++i) send.data[i] = input(me, i);
  const long before = fake.p2pLaunches();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(ncclSend(send.data + i, 1, ncclInt32, (me + 1) % n, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(recv.data + i, 1, ncclInt32, (me + n - 1) % n, comm, s), ncclSuccess);
  }
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
  fake.synchronize(stream);
  EXPECT_EQ(fake.p2pLaunches(), before) << "a group over the kernel's limit was launched";
  std::vector<int32_t> want(kMessages);
  for (int i = 0; i < kMessages; ++i) want[i] = input((me + n - 1) % n, i);
  expectElements(ctx, recv.data, want, "1200 transfers in one group");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceP2pKernelTest, AGroupOverTheKernelsLimitRunsOnHostSteps) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, hugeGroup, p2pOptions()));
}

// Without kernels (BRAID_DEVICE_KERNELS=0, or FIFOs that could not be set up) point-to-point runs
// as host-driven steps, which a graph cannot replay: refused under capture, saying why.
void refusedUnderCaptureWithoutKernels(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  ASSERT_FALSE(comm->device.channels.ready());
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  DeviceInts buf(8);
  fake.setCapturing(stream, true);
  EXPECT_EQ(ncclSend(buf.data, 4, ncclInt32, 0, comm, static_cast<cudaStream_t>(stream)),
            ncclInvalidUsage);
  const std::string e = ncclGetLastError(comm);
  EXPECT_NE(e.find("capturing a CUDA graph"), std::string::npos) << e;
  EXPECT_NE(e.find("no kernel runs"), std::string::npos) << e;
  fake.setCapturing(stream, false);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceP2pKernelTest, HostDrivenStepsAreRefusedUnderCapture) {
  RunOptions o = p2pOptions();
  o.env.push_back({"BRAID_DEVICE_KERNELS", "0"});
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(1, refusedUnderCaptureWithoutKernels, o));
}

/// One all-reduce of 70001 int32 on the collective kernel, checked.
void allReduceOnce(RankContext& ctx, ncclComm_t comm) {
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  constexpr size_t kCount = 70001;
  DeviceInts buf(kCount);
  for (size_t i = 0; i < kCount; ++i) buf.data[i] = input(ctx.rank(), i);
  const long launches = fake.kernelLaunches();
  ASSERT_EQ(ncclAllReduce(buf.data, buf.data, kCount, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(stream)),
            ncclSuccess);
  fake.synchronize(stream);
  EXPECT_GT(fake.kernelLaunches(), launches);
  std::vector<int32_t> want(kCount, 0);
  for (int r = 0; r < ctx.nranks(); ++r)
    for (size_t i = 0; i < kCount; ++i) want[i] += input(r, i);
  expectElements(ctx, buf.data, want, "all-reduce within the block budget");
}

// The blocks of every rank sharing a GPU must be resident at once (a resident block may wait for
// one that is not). On a GPU that keeps 12 blocks of the kernels resident, 3 thread ranks on it
// get 4 each: the collective channels fit (fewer than asked, or all 4 when none is asked for),
// point-to-point keeps one channel per peer (2 peers x 2 directions = 4 blocks); with 6 resident
// (2 each) point-to-point runs as host-driven steps, exact all the same.
void channelsWithinBudget(RankContext& ctx, int budget, int channels, bool p2pKernels) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  ASSERT_TRUE(comm->device.channels.ready());
  EXPECT_EQ(comm->device.channels.blockBudget(), budget);
  EXPECT_EQ(comm->device.channels.channels(), channels);
  allReduceOnce(ctx, comm);
  auto& fake = fakeDevice();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  const int n = ctx.nranks(), me = ctx.rank();
  constexpr size_t kCount = 5003;
  DeviceInts send(kCount * n), recv(kCount * n);
  for (size_t i = 0; i < kCount * n; ++i) send.data[i] = input(me, i);
  const long launches = fake.p2pLaunches();
  ASSERT_EQ(ncclAlltoAll(send.data, recv.data, kCount, ncclInt32, comm, s), ncclSuccess)
      << ncclGetLastError(comm);
  fake.synchronize(stream);
  EXPECT_EQ(fake.p2pLaunches() > launches, p2pKernels);
  std::vector<int32_t> want(kCount * n);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < kCount; ++i) want[r * kCount + i] = input(r, me * kCount + i);
  expectElements(ctx, recv.data, want, "all-to-all within the block budget");
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceP2pKernelTest, LaunchesFitTheBlocksTheGpuKeepsResident) {
  auto& fake = fakeDevice();
  struct Case {
    int resident;
    const char* asked;
    int budget, channels;
    bool p2pKernels;
  };
  for (const Case& c :
       {Case{12, "3", 4, 3, true}, Case{12, "8", 4, 4, true}, Case{12, "0", 4, 4, true},
        Case{6, "0", 2, 2, false}, Case{0, "0", 0, 8, true}}) {
    SCOPED_TRACE(testing::Message()
                 << c.resident << " resident, BRAID_DEVICE_CHANNELS=" << c.asked);
    fake.setResidentKernelBlocks(c.resident);
    RunOptions o = p2pOptions();
    o.env.push_back({"BRAID_DEVICE_CHANNELS", c.asked});
    BRAID_EXPECT_ALL_RANKS_OK(runThreads(
        3, [&](RankContext& ctx) { channelsWithinBudget(ctx, c.budget, c.channels, c.p2pKernels); },
        o));
  }
  fake.setResidentKernelBlocks(0);
}

// Thread ranks on one GPU launch on a stream each, and a process's streams reach the GPU through
// CUDA_DEVICE_MAX_CONNECTIONS hardware queues: with more ranks than queues, two ranks' kernels
// could share a queue, the later waiting behind the earlier that waits for it. Kernels stay off
// there (host-driven steps, with a warning naming the variable), and on where the ranks fit.
using DeviceLimitsTest = FakeDeviceTest;

TEST_F(DeviceLimitsTest, RanksBeyondTheHardwareQueuesRunWithoutKernels) {
  auto& fake = fakeDevice();
  for (int queues : {2, 3}) {
    SCOPED_TRACE(testing::Message() << queues << " hardware queues, 3 ranks");
    fake.setHardwareQueues(queues);
    BRAID_EXPECT_ALL_RANKS_OK(runThreads(
        3,
        [&](RankContext& ctx) {
          ncclComm_t comm = ctx.initComm();
          ASSERT_NE(comm, nullptr);
          EXPECT_EQ(comm->device.channels.ready(), queues >= 3);
          void* stream = fakeDevice().createStream(0);
          constexpr size_t kCount = 1031;
          DeviceInts send(kCount), recv(kCount);
          for (size_t i = 0; i < kCount; ++i) send.data[i] = input(ctx.rank(), i);
          const FakeDeviceRuntime::StreamPath before = fakeDevice().pathOf(stream);
          ASSERT_EQ(ncclAllReduce(send.data, recv.data, kCount, ncclInt32, ncclSum, comm,
                                  static_cast<cudaStream_t>(stream)),
                    ncclSuccess)
              << ncclGetLastError(comm);
          fakeDevice().synchronize(stream);
          const FakeDeviceRuntime::StreamPath after = fakeDevice().pathOf(stream);
          EXPECT_EQ(after.kernelLaunches - before.kernelLaunches, queues >= 3 ? 1 : 0);
          std::vector<int32_t> want(kCount, 0);
          for (int r = 0; r < ctx.nranks(); ++r)
            for (size_t i = 0; i < kCount; ++i) want[i] += input(r, i);
          expectElements(ctx, recv.data, want, "allreduce");
          EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
        },
        kernelTestOptions()));
  }
  fake.setHardwareQueues(0);
}

}  // namespace
}  // namespace braid::test
