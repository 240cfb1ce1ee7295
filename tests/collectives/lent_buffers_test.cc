// TCP sends the ring allreduce's input and final values straight out of the user's buffers
// (Primitives::lendBuffers): the proxy thread reads them after the algorithm has moved on. The
// call must not return while any of that memory is still queued. Each round one rank poisons both
// of its buffers the moment its call returns; every other rank checks every element, so a lent
// chunk sent after its owner returned shows up as a wrong value on the next rank.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

constexpr int kRounds = 24;
constexpr size_t kCount = 20011;  // prime; about 20 slots of 4 KiB per rank and round

int32_t inputOf(int rank, int round, size_t i) {
  return static_cast<int32_t>((i * 7 + static_cast<size_t>(rank) * 13 + round) % 1000);
}

void roundsWithPoison(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  std::vector<int32_t> send(kCount), recv(kCount);
  for (int round = 0; round < kRounds; round++) {
    const bool inPlace = round % 2 == 1;
    int32_t* in = inPlace ? recv.data() : send.data();
    for (size_t i = 0; i < kCount; i++) in[i] = inputOf(me, round, i);
    if (!inPlace) memset(recv.data(), 0x5a, kCount * sizeof(int32_t));
    ncclResult_t r = ncclAllReduce(in, recv.data(), kCount, ncclInt32, ncclSum, comm, nullptr);
    if (round % n == me) {
      // Straight away: anything the proxy still had to send from here is now wrong.
      memset(send.data(), 0xa5, kCount * sizeof(int32_t));
      memset(recv.data(), 0xa5, kCount * sizeof(int32_t));
    }
    if (r != ncclSuccess) {
      ctx.fail("round " + std::to_string(round) + ": " + ncclGetLastError(comm));
      break;
    }
    if (round % n == me) continue;
    size_t wrong = 0, first = kCount;
    for (size_t i = 0; i < kCount; i++) {
      int64_t want = 0;
      for (int p = 0; p < n; p++) want += inputOf(p, round, i);
      if (recv[i] != want && wrong++ == 0) first = i;
    }
    if (wrong)
      ctx.fail("round " + std::to_string(round) + (inPlace ? " in place" : " out of place") + ": " +
               std::to_string(wrong) + " wrong elements, the first at " + std::to_string(first) +
               " = " + std::to_string(recv[first]));
  }
  ncclCommDestroy(comm);
}

braid::test::RunOptions tcpRing() {
  braid::test::RunOptions o;
  o.timeoutS = 120;
  o.env = {{"BRAID_TRANSPORTS", "tcp"},
           {"NCCL_ALGO", "allreduce:ring"},
           {"BRAID_SLOT_BYTES", "4096"},
           {"BRAID_TIMEOUT_S", "60"}};
  return o;
}

TEST(LentBuffers, TcpRingThreadsReturnOnlyOnceSent) {
  for (int n : {2, 3, 5}) {
    auto report = braid::test::runThreads(n, roundsWithPoison, tcpRing());
    BRAID_EXPECT_ALL_RANKS_OK(report) << n << " ranks";
  }
}

TEST(LentBuffers, TcpRingProcessesReturnOnlyOnceSent) {
  for (int n : {2, 3}) {
    auto report = braid::test::runProcesses(n, roundsWithPoison, tcpRing());
    BRAID_EXPECT_ALL_RANKS_OK(report) << n << " ranks";
  }
}

}  // namespace
