// The P2P transport driven by the fake device (no GPU needed): which pairs of ranks it connects,
// the exchange of device-slot handles through the bootstrap (processes map the very memory the
// receiver allocated; threads share the pointer), several ranks on one device and ranks across
// devices, and a call whose ranks disagree on where their buffers are.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "device/device_runtime.h"
#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"
#include "transports/p2p/p2p_transport.h"

namespace {

using braid::PeerInfo;
using braid::TransportContext;
using braid::test::fakeDevice;
using braid::test::FakeDeviceRuntime;
using braid::test::RankContext;
using braid::test::RunOptions;
using braid::test::runProcesses;
using braid::test::runThreads;

class P2pTransportTest : public ::testing::Test {
  braid::test::FakeDeviceInstalled installed_;
};

RunOptions opts() {
  return braid::test::deviceTestOptions();
}

int32_t input(int rank, size_t i) {
  return braid::test::deviceTestInput(rank, i);
}

// Two ranks of one process on one host, with devices named 11 and 22.
struct Pair {
  std::vector<PeerInfo> peers = std::vector<PeerInfo>(2);
  TransportContext ctx;
  Pair() {
    for (int r = 0; r < 2; r++) {
      peers[r].rank = r;
      peers[r].hostHash = 7;
      peers[r].processHash = 9;
      peers[r].cudaDevice = r;
      peers[r].deviceId = r == 0 ? 11 : 22;
    }
    peers[0].reachable[0] = 22;
    peers[1].reachable[0] = 11;
    ctx.nranks = 2;
    ctx.peers = &peers;
  }
  // Whether the registry picks the P2P transport between the two ranks.
  bool viaP2p(int peer) {
    braid::Transport* t = braid::chooseTransport(ctx, peer);
    return t && std::string(t->name()) == "p2p";
  }
  bool connects() {
    ctx.rank = 0;
    const bool forward = viaP2p(1);
    ctx.rank = 1;
    EXPECT_EQ(viaP2p(0), forward) << "the rule must be symmetric";
    return forward;
  }
};

TEST(P2pTransportRules, WhichPairsConnect) {
  EXPECT_TRUE(Pair().connects()) << "devices that reach each other";
  {
    Pair p;
    p.peers[1].deviceId = 11;  // one device, two ranks: allowed, unlike NVIDIA's NCCL
    p.peers[1].reachable[0] = 0;
    EXPECT_TRUE(p.connects()) << "two ranks on one device";
  }
  {
    Pair p;
    p.peers[1].reachable[0] = 0;  // 22 cannot reach 11
    EXPECT_FALSE(p.connects()) << "peer access one way only";
  }
  {
    Pair p;
    p.peers[1].deviceId = 0;
    EXPECT_FALSE(p.connects()) << "a rank without a device";
  }
  {
    Pair p;
    p.peers[1].hostHash = 8;
    EXPECT_FALSE(p.connects()) << "ranks on two hosts";
  }
  {
    Pair p;
    p.ctx.allowed = {"local", "shm", "tcp"};
    EXPECT_FALSE(p.connects()) << "BRAID_TRANSPORTS without p2p";
    p.ctx.allowed = {"local", "p2p"};
    EXPECT_TRUE(p.connects()) << "BRAID_TRANSPORTS with p2p";
    p.ctx.allowed = {"tcp", "p2p"};
    EXPECT_FALSE(p.connects()) << "control words over TCP: no memory both ends map";
  }
  {
    Pair p;
    ASSERT_EQ(setenv("NCCL_P2P_DISABLE", "1", 1), 0);
    EXPECT_FALSE(p.connects()) << "NCCL_P2P_DISABLE=1";
    unsetenv("NCCL_P2P_DISABLE");
  }
  {
    Pair p;
    p.ctx.rank = 0;
    EXPECT_TRUE(braid::p2pConnectsAll(p.ctx));
    p.peers[1].deviceId = 0;
    EXPECT_FALSE(braid::p2pConnectsAll(p.ctx));
    p.ctx.nranks = 1;
    EXPECT_TRUE(braid::p2pConnectsAll(p.ctx)) << "one rank with a device";
  }
}

// Each rank writes a pattern into the device slots of the FIFO towards the next rank, as its
// sender mapped them (a pointer in another process, opened from the handle); the next rank finds
// it in the slots it allocated. Then the FIFOs carry an allreduce over the same slots.
void handlesMapTheReceiversSlots(RankContext& ctx) {
  const int opened = fakeDevice().openedMappings();
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  const int n = ctx.nranks(), me = ctx.rank();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  ASSERT_TRUE(comm->team.overP2p);
  for (int p = 0; p < n; p++) {
    if (p == me) continue;
    EXPECT_TRUE(comm->team.sendTo[p]->fifo().hasDeviceSlots()) << "towards rank " << p;
    EXPECT_TRUE(comm->team.recvFrom[p]->fifo().hasDeviceSlots()) << "from rank " << p;
  }
  if (ctx.shape() == braid::test::RankShape::kProcesses) {
    // Each peer's slots towards this rank, and each peer's collective-kernel FIFOs.
    EXPECT_EQ(fakeDevice().openedMappings() - opened, 2 * (n - 1));
    EXPECT_TRUE(comm->device.channels.ready());
  }
  braid::FifoSender& out = comm->team.sendTo[next]->fifo();
  braid::FifoReceiver& in = comm->team.recvFrom[prev]->fifo();
  const size_t slotBytes = out.slotBytes();
  auto* mine = static_cast<uint32_t*>(out.deviceSlot(braid::fifoSlots(out.control())));
  for (size_t i = 0; i < slotBytes / 4; i++) mine[i] = static_cast<uint32_t>(me * 1000003 + i);
  // A host allreduce orders the writes before the reads.
  int32_t token = 1;
  ASSERT_EQ(ncclAllReduce(&token, &token, 1, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
  auto* theirs = static_cast<const uint32_t*>(in.deviceSlot(braid::fifoSlots(in.control())));
  EXPECT_EQ(braid::deviceRuntime().place(theirs).kind, braid::MemoryKind::kDevice);
  for (size_t i = 0; i < slotBytes / 4; i++) {
    if (theirs[i] != static_cast<uint32_t>(prev * 1000003 + i)) {
      ctx.fail("slot word " + std::to_string(i) + " is " + std::to_string(theirs[i]) +
               ": the sender's mapping is not the receiver's memory");
      break;
    }
  }
  ASSERT_EQ(ncclAllReduce(&token, &token, 1, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(P2pTransportTest, HandlesMapTheReceiversSlotsThreads) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(3, handlesMapTheReceiversSlots, opts()));
}

TEST_F(P2pTransportTest, HandlesMapTheReceiversSlotsProcesses) {
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, handlesMapTheReceiversSlots, opts()));
}

// ncclCommInitAll with devices {0, 1, 0, 1, 0}: ranks share a device and span two. One thread
// issues every rank's allreduce on its device's stream; nothing is staged.
TEST_F(P2pTransportTest, RanksShareDevicesAndSpanThem) {
  FakeDeviceRuntime& fake = fakeDevice();
  const int n = 5;
  const int devlist[n] = {0, 1, 0, 1, 0};
  std::vector<ncclComm_t> comms(n);
  ASSERT_EQ(ncclCommInitAll(comms.data(), n, devlist), ncclSuccess);
  const int staging = fake.stagingAllocations();
  const long ops = fake.deviceOps();
  const long launches = fake.kernelLaunches();
  for (size_t count : {size_t{1}, size_t{1021}, size_t{300007}}) {
    std::vector<int32_t*> bufs(n);
    std::vector<void*> streams(n);
    for (int r = 0; r < n; r++) {
      int device = -1;
      ASSERT_EQ(ncclCommCuDevice(comms[r], &device), ncclSuccess);
      EXPECT_EQ(device, devlist[r]);
      EXPECT_TRUE(comms[r]->team.overP2p);
      streams[r] = fake.createStream(devlist[r]);
      bufs[r] = static_cast<int32_t*>(fake.deviceAlloc(devlist[r], count * 4));
      for (size_t i = 0; i < count; i++) bufs[r][i] = input(r, i);
    }
    for (int r = 0; r < n; r++)
      ASSERT_EQ(ncclAllReduce(bufs[r], bufs[r], count, ncclInt32, ncclSum, comms[r],
                              static_cast<cudaStream_t>(streams[r])),
                ncclSuccess)
          << ncclGetLastError(comms[r]);
    for (int r = 0; r < n; r++) fake.synchronize(streams[r]);
    for (int r = 0; r < n; r++) {
      for (size_t i = 0; i < count; i++) {
        int32_t want = 0;
        for (int q = 0; q < n; q++) want += input(q, i);
        if (bufs[r][i] != want) {
          ADD_FAILURE() << "count " << count << " rank " << r << " element " << i << " is "
                        << bufs[r][i] << ", expected " << want;
          break;
        }
      }
      fake.deviceFree(bufs[r]);
    }
  }
  EXPECT_EQ(fake.stagingAllocations(), staging) << "a call was staged through the host";
  // One collective kernel per rank and call; no host-driven step.
  EXPECT_EQ(fake.kernelLaunches() - launches, 3 * n);
  EXPECT_EQ(fake.deviceOps(), ops);
  for (ncclComm_t c : comms) {
    ncclResult_t async = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(c);
    EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
}

// Rank 0 passes device buffers, rank 1 host buffers. With host-driven steps over the P2P
// transport the two would read different slots, so the call fails on both, naming the
// difference. With collective kernels the two meet nowhere: each fails at the timeout.
void mixedPlacement(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  const bool kernels = comm->device.channels.ready();
  const size_t count = 1000;
  if (ctx.rank() == 0) {
    void* stream = fakeDevice().createStream(0);
    auto* buf = static_cast<int32_t*>(fakeDevice().deviceAlloc(0, count * 4));
    ASSERT_EQ(
        ncclAllReduce(buf, buf, count, ncclInt32, ncclSum, comm, static_cast<cudaStream_t>(stream)),
        ncclSuccess);
    fakeDevice().synchronize(stream);
    ncclResult_t async = ncclSuccess;
    EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
    EXPECT_EQ(async, kernels ? ncclSystemError : ncclInvalidUsage);
    fakeDevice().deviceFree(buf);
  } else {
    std::vector<int32_t> buf(count, 1);
    EXPECT_EQ(ncclAllReduce(buf.data(), buf.data(), count, ncclInt32, ncclSum, comm, nullptr),
              kernels ? ncclRemoteError : ncclInvalidUsage);
  }
  const std::string text = ncclGetLastError(comm);
  if (!kernels) {
    EXPECT_NE(text.find("device memory, the other's host memory"), std::string::npos) << text;
    EXPECT_NE(text.find("on device buffers"), std::string::npos) << text;
  } else if (ctx.rank() == 0) {
    EXPECT_NE(text.find("collective kernel gave up waiting"), std::string::npos) << text;
  } else {
    EXPECT_NE(text.find("rank 1: AllReduce #1"), std::string::npos) << text;
  }
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

TEST_F(P2pTransportTest, MixedPlacementIsNamed) {
  RunOptions o = opts();
  o.env.push_back({"NCCL_ALGO", "Ring"});  // the host rank reads slots too
  o.env.push_back({"BRAID_DEVICE_KERNELS", "0"});
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, mixedPlacement, o));
}

TEST_F(P2pTransportTest, MixedPlacementWithKernelsFailsAtTheTimeout) {
  RunOptions o = opts();
  o.env = {{"BRAID_TIMEOUT_S", "3"}};
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, mixedPlacement, o));
}

}  // namespace
