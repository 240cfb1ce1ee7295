// Device buffers over the host transports, driven by a fake device (no GPU needed): calls on
// device buffers return before their work has run and complete in stream order, every
// collective gives exact results from staged copies, and bad placements get a clear error.
// Ranks as threads and as processes.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "device/device_runtime.h"
#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"

namespace {

using braid::test::fakeDevice;
using braid::test::FakeDeviceRuntime;
using braid::test::RankContext;
using braid::test::RunOptions;
using braid::test::runProcesses;
using braid::test::runThreads;

constexpr int32_t kPoison = braid::test::kDeviceTestPoison;

int32_t input(int rank, size_t i) {
  return braid::test::deviceTestInput(rank, i);
}

RunOptions opts() {
  return braid::test::deviceTestOptions();
}

/// The host-driven steps over the P2P transport: what runs where the kernels cannot (their
/// FIFOs could not be set up, processes sharing a GPU without MPS, a group over a kernel's
/// size). Collectives and point-to-point as kernels: device_kernel_test, device_p2p_kernel_test.
RunOptions hostDriven() {
  RunOptions o = braid::test::deviceTestOptions();
  o.env.push_back({"BRAID_DEVICE_KERNELS", "0"});
  return o;
}

RunOptions staged() {
  return braid::test::stagedDeviceTestOptions();
}

/// Installs the fake runtime for the test's lifetime.
class DevicePathTest : public ::testing::Test {
  braid::test::FakeDeviceInstalled installed_;
};

using braid::test::DeviceInts;
using braid::test::expectElements;

// The stream is held while the call is made: the call returns, the outputs are untouched until
// the stream runs, and then they are exact.
void allReduceInStreamOrder(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  int device = -2;
  ASSERT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
  EXPECT_EQ(device, 0);
  void* stream = fakeDevice().createStream(0);
  for (size_t count : {size_t{1}, size_t{7}, size_t{1021}, size_t{65537}}) {
    for (bool inPlace : {false, true}) {
      DeviceInts send(count), recv(count);
      for (size_t i = 0; i < count; ++i) send.data[i] = input(ctx.rank(), i);
      int32_t* out = inPlace ? send.data : recv.data;
      fakeDevice().hold(stream);
      ASSERT_EQ(ncclAllReduce(send.data, out, count, ncclInt32, ncclSum, comm,
                              static_cast<cudaStream_t>(stream)),
                ncclSuccess)
          << ncclGetLastError(comm);
      if (!inPlace) {
        EXPECT_EQ(recv.data[0], kPoison) << "the output was written before the stream ran";
      }
      fakeDevice().release(stream);
      fakeDevice().synchronize(stream);
      std::vector<int32_t> want(count, 0);
      for (int r = 0; r < ctx.nranks(); ++r)
        for (size_t i = 0; i < count; ++i) want[i] += input(r, i);
      expectElements(ctx, out, want,
                     "allreduce count " + std::to_string(count) + (inPlace ? " in place" : ""));
    }
  }
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DevicePathTest, AllReduceThreadsCompleteInStreamOrder) {
  for (int n : {1, 2, 3}) BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, allReduceInStreamOrder, opts()));
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(3, allReduceInStreamOrder, staged()));
}

TEST_F(DevicePathTest, AllReduceProcessesCompleteInStreamOrder) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, allReduceInStreamOrder, opts()));
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, allReduceInStreamOrder, staged()));
}

// Calls queued behind each other on one held stream share the stream's staging block (and one
// needs a larger block): each still gets its own inputs' result.
void queuedCallsShareStaging(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  void* stream = fakeDevice().createStream(0);
  const std::vector<size_t> counts = {100, 3, 70001, 100, 5};
  std::vector<std::unique_ptr<DeviceInts>> bufs;
  fakeDevice().hold(stream);
  for (size_t c = 0; c < counts.size(); ++c) {
    bufs.push_back(std::make_unique<DeviceInts>(counts[c]));
    for (size_t i = 0; i < counts[c]; ++i) bufs[c]->data[i] = input(ctx.rank(), i + 31 * c);
    ASSERT_EQ(ncclAllReduce(bufs[c]->data, bufs[c]->data, counts[c], ncclInt32, ncclSum, comm,
                            static_cast<cudaStream_t>(stream)),
              ncclSuccess);
  }
  fakeDevice().release(stream);
  fakeDevice().synchronize(stream);
  for (size_t c = 0; c < counts.size(); ++c) {
    std::vector<int32_t> want(counts[c], 0);
    for (int r = 0; r < ctx.nranks(); ++r)
      for (size_t i = 0; i < counts[c]; ++i) want[i] += input(r, i + 31 * c);
    expectElements(ctx, bufs[c]->data, want, "queued call " + std::to_string(c));
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DevicePathTest, QueuedCallsShareStagingThreads) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(3, queuedCallsShareStaging, staged()));
}

// Issue order across streams: rank 0 holds its first stream, rank 1 its second. Each rank issues
// call A (count 1021) on the first stream, then call B (count 77) on the second, then a host call
// (count 5, NULL stream). Run in stream order alone, rank 0 would start B while rank 1 starts A;
// in issue order every rank runs A, B, then the host call.
void issueOrderAcrossStreams(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  void* first = fakeDevice().createStream(0);
  void* second = fakeDevice().createStream(0);
  void* held = ctx.rank() == 0 ? first : second;
  DeviceInts a(1021), b(77);
  for (size_t i = 0; i < a.count; ++i) a.data[i] = input(ctx.rank(), i);
  for (size_t i = 0; i < b.count; ++i) b.data[i] = input(ctx.rank(), i + 5);
  std::vector<int32_t> host(5);
  for (size_t i = 0; i < host.size(); ++i) host[i] = input(ctx.rank(), i + 9);
  fakeDevice().hold(held);
  ASSERT_EQ(ncclAllReduce(a.data, a.data, a.count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(first)),
            ncclSuccess);
  ASSERT_EQ(ncclAllReduce(b.data, b.data, b.count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(second)),
            ncclSuccess);
  std::thread releaser([held] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    fakeDevice().release(held);
  });
  // Returns once both device calls' host steps ran, then runs itself.
  EXPECT_EQ(ncclAllReduce(host.data(), host.data(), host.size(), ncclInt32, ncclSum, comm, nullptr),
            ncclSuccess)
      << ncclGetLastError(comm);
  releaser.join();
  fakeDevice().synchronize(first);
  fakeDevice().synchronize(second);
  auto sums = [&](size_t count, size_t shift) {
    std::vector<int32_t> want(count, 0);
    for (int r = 0; r < ctx.nranks(); ++r)
      for (size_t i = 0; i < count; ++i) want[i] += input(r, i + shift);
    return want;
  };
  expectElements(ctx, a.data, sums(a.count, 0), "call A");
  expectElements(ctx, b.data, sums(b.count, 5), "call B");
  expectElements(ctx, host.data(), sums(host.size(), 9), "the host call");
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DevicePathTest, IssueOrderAcrossStreamsThreads) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, issueOrderAcrossStreams, opts()));
}

bool envIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::strcmp(v, value) == 0;
}

// Every other collective on device buffers against closed-form expectations. Over the P2P
// transport every byte moves through the fake's device copies and reductions (which refuse host
// memory); staged, none does. Counts 200003 span several slots.
void everyCollective(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  const bool staged = envIs("NCCL_P2P_DISABLE", "1") || envIs("NCCL_SHM_DISABLE", "1");
  EXPECT_EQ(comm->team.overP2p, !staged);
  const long opsBefore = fakeDevice().deviceOps();
  void* stream = fakeDevice().createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  const int n = ctx.nranks(), me = ctx.rank();
  auto sync = [&] { fakeDevice().synchronize(stream); };
  for (size_t count : {size_t{1}, size_t{13}, size_t{4099}, size_t{200003}}) {
    const std::string at = " count " + std::to_string(count);
    for (int root : {0, n - 1, n / 2}) {
      DeviceInts buf(count);
      if (me == root)
        for (size_t i = 0; i < count; ++i) buf.data[i] = input(root, i);
      ASSERT_EQ(ncclBroadcast(buf.data, buf.data, count, ncclInt32, root, comm, s), ncclSuccess);
      sync();
      std::vector<int32_t> want(count);
      for (size_t i = 0; i < count; ++i) want[i] = input(root, i);
      expectElements(ctx, buf.data, want, "broadcast root " + std::to_string(root) + at);

      DeviceInts send(count), recv(count);
      for (size_t i = 0; i < count; ++i) send.data[i] = input(me, i);
      ASSERT_EQ(ncclReduce(send.data, recv.data, count, ncclInt32, ncclSum, root, comm, s),
                ncclSuccess);
      sync();
      std::vector<int32_t> sum(count, 0);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) sum[i] += input(r, i);
      if (me == root)
        expectElements(ctx, recv.data, sum, "reduce root " + std::to_string(root) + at);
    }
    // All-gather and reduce-scatter, out of place and in place (the rank's block inside).
    for (bool inPlace : {false, true}) {
      DeviceInts big(count * n), small(count);
      int32_t* mine = inPlace ? big.data + me * count : small.data;
      for (size_t i = 0; i < count; ++i) mine[i] = input(me, i);
      ASSERT_EQ(ncclAllGather(mine, big.data, count, ncclInt32, comm, s), ncclSuccess);
      sync();
      std::vector<int32_t> gathered(count * n);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) gathered[r * count + i] = input(r, i);
      expectElements(ctx, big.data, gathered,
                     std::string("allgather") + (inPlace ? " in place" : "") + at);

      DeviceInts whole(count * n), part(count);
      for (size_t i = 0; i < count * n; ++i) whole.data[i] = input(me, i);
      int32_t* out = inPlace ? whole.data + me * count : part.data;
      ASSERT_EQ(ncclReduceScatter(whole.data, out, count, ncclInt32, ncclSum, comm, s),
                ncclSuccess);
      sync();
      std::vector<int32_t> block(count, 0);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) block[i] += input(r, me * count + i);
      expectElements(ctx, out, block,
                     std::string("reducescatter") + (inPlace ? " in place" : "") + at);
    }
    // All-to-all, gather, scatter: block p of rank r holds input(r, p * count + i).
    DeviceInts a2aSend(count * n), a2aRecv(count * n);
    for (size_t i = 0; i < count * n; ++i) a2aSend.data[i] = input(me, i);
    ASSERT_EQ(ncclAlltoAll(a2aSend.data, a2aRecv.data, count, ncclInt32, comm, s), ncclSuccess);
    sync();
    std::vector<int32_t> a2a(count * n);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) a2a[r * count + i] = input(r, me * count + i);
    expectElements(ctx, a2aRecv.data, a2a, "alltoall" + at);

    const int root = n - 1;
    DeviceInts gSend(count), gRecv(count * n);
    for (size_t i = 0; i < count; ++i) gSend.data[i] = input(me, i);
    ASSERT_EQ(ncclGather(gSend.data, gRecv.data, count, ncclInt32, root, comm, s), ncclSuccess);
    sync();
    std::vector<int32_t> gathered(count * n);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) gathered[r * count + i] = input(r, i);
    if (me == root) expectElements(ctx, gRecv.data, gathered, "gather" + at);

    DeviceInts sSend(count * n), sRecv(count);
    for (size_t i = 0; i < count * n; ++i) sSend.data[i] = input(me, i);
    ASSERT_EQ(ncclScatter(sSend.data, sRecv.data, count, ncclInt32, root, comm, s), ncclSuccess);
    sync();
    std::vector<int32_t> scattered(count);
    for (size_t i = 0; i < count; ++i) scattered[i] = input(root, me * count + i);
    expectElements(ctx, sRecv.data, scattered, "scatter" + at);

    // A ring of send/recv inside a group (one staged batch), to the next rank.
    DeviceInts pSend(count), pRecv(count);
    for (size_t i = 0; i < count; ++i) pSend.data[i] = input(me, i);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(pSend.data, count, ncclInt32, (me + 1) % n, comm, s), ncclSuccess);
    ASSERT_EQ(ncclRecv(pRecv.data, count, ncclInt32, (me + n - 1) % n, comm, s), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
    sync();
    std::vector<int32_t> fromPrevious(count);
    for (size_t i = 0; i < count; ++i) fromPrevious[i] = input((me + n - 1) % n, i);
    expectElements(ctx, pRecv.data, fromPrevious, "send/recv ring" + at);
  }
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comm);
  if (staged)
    EXPECT_EQ(fakeDevice().deviceOps(), opsBefore) << "a staged call moved data on the device";
  else
    EXPECT_GT(fakeDevice().deviceOps(), opsBefore) << "no call moved data on the device";
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DevicePathTest, EveryCollectiveThreadsOverP2p) {
  for (int n : {1, 3}) BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, everyCollective, hostDriven()));
}

TEST_F(DevicePathTest, EveryCollectiveProcessesOverP2p) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, everyCollective, hostDriven()));
}

TEST_F(DevicePathTest, EveryCollectiveThreadsStagedOverShm) {
  for (int n : {1, 3}) BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, everyCollective, staged()));
}

TEST_F(DevicePathTest, EveryCollectiveProcessesStagedOverShm) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, everyCollective, staged()));
}

TEST_F(DevicePathTest, EveryCollectiveProcessesOverTcp) {
  RunOptions o = opts();
  o.env.push_back({"NCCL_SHM_DISABLE", "1"});
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, everyCollective, o));
}

std::string lastErrorOf(ncclComm_t comm) {
  return ncclGetLastError(comm);
}

// Bad placements: a clear error naming the argument, nothing enqueued.
void badPlacements(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  FakeDeviceRuntime& fake = fakeDevice();
  void* stream = fake.createStream(0);
  auto s = static_cast<cudaStream_t>(stream);
  DeviceInts dev(16);
  std::vector<int32_t> host(16, 1);

  EXPECT_EQ(ncclAllReduce(host.data(), dev.data, 16, ncclInt32, ncclSum, comm, s),
            ncclInvalidArgument);
  std::string e = lastErrorOf(comm);
  EXPECT_NE(e.find("sendbuff="), std::string::npos) << e;
  EXPECT_NE(e.find("is host memory but recvbuff="), std::string::npos) << e;

  auto* other = static_cast<int32_t*>(fake.deviceAlloc(1, 64));
  EXPECT_EQ(ncclAllReduce(dev.data, other, 16, ncclInt32, ncclSum, comm, s), ncclInvalidArgument);
  e = lastErrorOf(comm);
  EXPECT_NE(e.find("recvbuff="), std::string::npos) << e;
  EXPECT_NE(e.find("is memory of device 1, but the communicator's device is 0"), std::string::npos)
      << e;
  fake.deviceFree(other);

  void* otherStream = fake.createStream(1);
  EXPECT_EQ(ncclBroadcast(dev.data, dev.data, 16, ncclInt32, 0, comm,
                          static_cast<cudaStream_t>(otherStream)),
            ncclInvalidArgument);
  e = lastErrorOf(comm);
  EXPECT_NE(e.find("belongs to device 1, but the communicator's device is 0"), std::string::npos)
      << e;

  // Under capture collectives and point-to-point are kernel launches, which a graph records.
  fake.setCapturing(stream, true);
  EXPECT_EQ(ncclAllGather(dev.data, dev.data, 16 / ctx.nranks(), ncclInt32, comm, s), ncclSuccess)
      << lastErrorOf(comm);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(dev.data, 4, ncclInt32, 0, comm, s), ncclSuccess);
  EXPECT_EQ(ncclRecv(dev.data + 4, 4, ncclInt32, 0, comm, s), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << lastErrorOf(comm);
  fake.setCapturing(stream, false);
  fake.synchronize(stream);

  // A send of host memory and a receive of device memory in one group.
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(host.data(), 4, ncclInt32, 0, comm, s), ncclSuccess);
  EXPECT_EQ(ncclRecv(dev.data, 4, ncclInt32, 0, comm, s), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  e = lastErrorOf(comm);
  EXPECT_NE(e.find("must all be host memory or all device memory"), std::string::npos) << e;
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DevicePathTest, BadPlacementsAreRejectedByName) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(1, badPlacements, opts()));
}

TEST_F(DevicePathTest, InitAllTakesTheDeviceList) {
  // The fake has devices 0 and 1. Two ranks on device 1, then a list naming no device.
  ncclComm_t comms[2] = {nullptr, nullptr};
  const int onOne[2] = {1, 1};
  ASSERT_EQ(ncclCommInitAll(comms, 2, onOne), ncclSuccess);
  for (ncclComm_t comm : comms) {
    int device = -2;
    EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
    EXPECT_EQ(device, 1);
  }
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  for (int i = 0; i < 2; ++i) {
    int device = -2;
    EXPECT_EQ(ncclCommCuDevice(comms[i], &device), ncclSuccess);
    EXPECT_EQ(device, i);
  }
  for (ncclComm_t comm : comms) EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  const int missing[2] = {0, 5};
  EXPECT_EQ(ncclCommInitAll(comms, 2, missing), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("devlist[1]=5: no such CUDA device"),
            std::string::npos)
      << ncclGetLastError(nullptr);
}

std::atomic<bool> silentPeerDone{false};

// A peer that never calls: the host work fails at the timeout, the stream still completes, and
// the failure is the communicator's asynchronous error.
void peerNeverCalls(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  void* stream = fakeDevice().createStream(0);
  DeviceInts buf(1024);
  if (ctx.rank() == 0) {
    ASSERT_EQ(ncclAllReduce(buf.data, buf.data, 1024, ncclInt32, ncclSum, comm,
                            static_cast<cudaStream_t>(stream)),
              ncclSuccess);
    fakeDevice().synchronize(stream);
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_NE(async, ncclSuccess);
    silentPeerDone = true;
  } else {
    while (!silentPeerDone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

TEST_F(DevicePathTest, SilentPeerBecomesAsyncError) {
  RunOptions o = opts();
  o.env = {{"BRAID_TIMEOUT_S", "2"}};
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, peerNeverCalls, o));
}

TEST(DevicePathWithoutDevices, CommunicatorHasNoDevice) {
  // A runtime without devices: every pointer is host memory and the communicator's device is -1.
  braid::setDeviceRuntime(&braid::noDeviceRuntime());
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(1, [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    ASSERT_NE(comm, nullptr);
    int device = 7;
    EXPECT_EQ(ncclCommCuDevice(comm, &device), ncclSuccess);
    EXPECT_EQ(device, -1);
    std::vector<int32_t> buf(5, 3);
    EXPECT_EQ(ncclAllReduce(buf.data(), buf.data(), 5, ncclInt32, ncclSum, comm, nullptr),
              ncclSuccess);
    EXPECT_EQ(buf[4], 3);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  }));
  braid::setDeviceRuntime(nullptr);
}

}  // namespace
