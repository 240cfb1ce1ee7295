// The device protocol's edges, on CPU threads: a peer that never comes makes the channels give
// up at the deadline instead of hanging; step numbers carry over from one launch to the next and
// across the three protocols (slots and line flags reused); arguments the schedules cannot run are
// refused before any block starts; an empty collective moves nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "kernels/device/emulation.h"
#include "kernels/ops.h"

namespace braid::kernels::device {
namespace {

CollectiveArgs allReduceInt32(const EmulatedWorld& world, int rank, const std::int32_t* in,
                              std::int32_t* out, std::size_t count, Protocol protocol) {
  CollectiveArgs a;
  a.collective = Collective::kAllReduce;
  a.algorithm = Algorithm::kRing;
  a.protocol = protocol;
  a.count = count;
  a.sendbuff = in;
  a.recvbuff = out;
  a.op.dtype = dtype::kInt32;
  a.comm = world.comm(rank);
  return a;
}

// Under Simple the leader waits for a tail; under LL and LL128 every thread waits for its lines.
TEST(EmulationFaults, AMissingPeerMakesTheChannelsGiveUpAtTheDeadline) {
  for (Protocol protocol : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
    EmulatedWorld world(2, 1);
    std::vector<std::int32_t> in(100, 1), out0(100), out1(100);
    std::vector<CollectiveArgs> args{
        allReduceInt32(world, 0, in.data(), out0.data(), 100, protocol),
        allReduceInt32(world, 1, in.data(), out1.data(), 0, protocol)};
    const auto start = std::chrono::steady_clock::now();
    const std::string error = world.launch(args, std::chrono::milliseconds(300));
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_NE(error.find("rank 0 channel 0 gave up waiting"), std::string::npos) << error;
    EXPECT_EQ(error.find("rank 1"), std::string::npos) << error;
    EXPECT_LT(took, std::chrono::seconds(10));
  }
}

// Two ranks in the same call number with different counts (rank 0's takes several chunks, rank
// 1's one): the one left waiting finds its peer's published call differs from its own and
// reports a mismatch (the peer, both calls), not a plain timeout; with the same call on both
// sides the same wait is only a timeout.
TEST(EmulationFaults, APeerInAnotherCallIsAMismatch) {
  for (Protocol protocol : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
    EmulatedWorld world(2, 1);
    std::vector<std::int32_t> in(5000, 1), out0(5000), out1(5000);
    std::vector<CollectiveArgs> args{
        allReduceInt32(world, 0, in.data(), out0.data(), 5000, protocol),
        allReduceInt32(world, 1, in.data(), out1.data(), 60, protocol)};
    const std::uint64_t calls[2][3] = {{7, 5000, 3}, {7, 60, 3}};
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 3; ++i) args[r].call[i] = calls[r][i];
    const std::string error = world.launch(args, std::chrono::milliseconds(300));
    EXPECT_NE(error.find("rank 0 channel 0 gave up waiting for a peer in another call"),
              std::string::npos)
        << error;
    const std::uint64_t* report = world.comm(0).report;
    EXPECT_EQ(report[0], 1u);  // the peer
    EXPECT_EQ(report[2], 5000u);
    EXPECT_EQ(report[5], 60u);
    // The same call everywhere, one rank short of data: a timeout, not a mismatch.
    args[1].call[1] = 5000;
    args[1].count = 0;
    const std::string timeout = world.launch(args, std::chrono::milliseconds(300));
    EXPECT_NE(timeout.find("rank 0 channel 0 gave up waiting (abort"), std::string::npos)
        << timeout;
  }
}

TEST(EmulationFaults, StepsCarryOverLaunchesAndProtocols) {
  const int n = 3, channels = 2;
  EmulatedWorld world(n, channels, FifoShape{2, 64, 32, 256});
  std::uint64_t before = 0;
  for (int launch = 0; launch < 40; ++launch) {
    const std::size_t count = 1 + (launch * 37) % 211;
    const Protocol protocol = launch % 3 == 0   ? Protocol::kLL
                              : launch % 3 == 1 ? Protocol::kLL128
                                                : Protocol::kSimple;
    std::vector<std::vector<std::int32_t>> in(n), out(n);
    std::vector<CollectiveArgs> args;
    for (int r = 0; r < n; ++r) {
      in[r].resize(count);
      for (std::size_t i = 0; i < count; ++i)
        in[r][i] = static_cast<std::int32_t>(launch * 1000 + r * 100 + i);
      out[r].assign(count, -1);
      args.push_back(allReduceInt32(world, r, in[r].data(), out[r].data(), count, protocol));
    }
    ASSERT_EQ(world.launch(args), "") << "launch " << launch;
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(out[r][i], 3 * (launch * 1000 + static_cast<std::int32_t>(i)) + 300)
            << "launch " << launch << " rank " << r << " element " << i;
    // Every slot handed over was handed back, and the counts only grow; under Simple the
    // published tail has caught up with the sender's count.
    const DeviceFifo& f = world.fifo(0, 1, 1);
    const std::uint64_t sent = world.sent(0, 1, 1);
    EXPECT_EQ(sent, f.head);
    if (protocol == Protocol::kSimple) {
      EXPECT_EQ(f.tail, sent);
    }
    EXPECT_GT(sent, before);
    before = sent;
  }
  EXPECT_GT(before, 40u * 2);  // far more steps than slots: each slot was reused many times
}

TEST(EmulationFaults, ArgumentsTheSchedulesCannotRunAreRefused) {
  EmulatedWorld world(2, 1);
  std::vector<std::int32_t> in(8), out(8);
  std::vector<CollectiveArgs> args{
      allReduceInt32(world, 0, in.data(), out.data(), 8, Protocol::kSimple),
      allReduceInt32(world, 1, in.data(), out.data(), 8, Protocol::kSimple)};
  for (CollectiveArgs& a : args) {
    a.collective = Collective::kBroadcast;
    a.algorithm = Algorithm::kTree;
  }
  EXPECT_NE(world.launch(args).find("all-reduce schedules"), std::string::npos);
  for (CollectiveArgs& a : args) {
    a.collective = Collective::kAllReduce;
    a.algorithm = Algorithm::kRing;
    a.op.dtype = 12;
  }
  EXPECT_NE(world.launch(args).find("data type"), std::string::npos);
  args[0].op.dtype = args[1].op.dtype = dtype::kInt32;
  args[1].root = 5;
  EXPECT_NE(world.launch(args).find("rank 1: root outside"), std::string::npos);
  args[1].root = 0;
  args[0].comm.channels = 2;
  EXPECT_NE(world.launch(args).find("more channels"), std::string::npos);
  EmulatedWorld wide(2, 2);
  args[0].comm = wide.comm(0);
  args[1].comm = wide.comm(1);
  args[1].comm.channels = 1;
  EXPECT_NE(wide.launch(args).find("rank 1 runs 1 channels, rank 0 2"), std::string::npos);
}

TEST(EmulationFaults, AnEmptyCollectiveMovesNothing) {
  EmulatedWorld world(3, 2);
  std::vector<std::int32_t> in(4, 7), out(4, -1);
  std::vector<CollectiveArgs> args;
  for (int r = 0; r < 3; ++r)
    args.push_back(allReduceInt32(world, r, in.data(), out.data(), 0, Protocol::kLL));
  ASSERT_EQ(world.launch(args), "");
  EXPECT_EQ(out, std::vector<std::int32_t>(4, -1));
  EXPECT_EQ(world.fifo(0, 1, 0).tail, 0u);
  EXPECT_EQ(world.sent(0, 1, 0), 0u);
  EXPECT_EQ(world.fifo(2, 0, 1).head, 0u);
}

}  // namespace
}  // namespace braid::kernels::device
