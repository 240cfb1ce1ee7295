// braidCommProbe: data from a peer is reported waiting once a send has begun and until a receive
// takes it, never before; other ranks' data is not reported for this peer; bad arguments are
// named. Threads over same-process connections and TCP, and processes over shared memory.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

int probe(ncclComm_t comm, int peer) {
  int arrived = -1;
  EXPECT_EQ(braidCommProbe(comm, peer, &arrived), ncclSuccess) << ncclGetLastError(comm);
  return arrived;
}

// Rank 0 tells every rank when it may go on (a one-element message), so nothing but what the
// test sends can be in flight while rank 0 probes: the others wait for "go" before rank 1 sends
// and before anyone runs another collective.
void go(ncclComm_t comm, int me, int n) {
  int32_t token = 1;
  if (me == 0) {
    ncclGroupStart();
    for (int p = 1; p < n; p++) ncclSend(&token, 1, ncclInt32, p, comm, nullptr);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(comm);
  } else {
    ASSERT_EQ(ncclRecv(&token, 1, ncclInt32, 0, comm, nullptr), ncclSuccess);
  }
}

// Rank 1 sends to rank 0; rank 0 sees nothing waiting before the send, then rank 1's data and
// nothing from the others, receives it exactly, and then sees nothing again.
void probeThenReceive(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int me = ctx.rank(), n = ctx.nranks();
  const size_t count = 1031;
  if (me == 0) {
    for (int p = 1; p < n; p++) EXPECT_EQ(probe(comm, p), 0) << "data from rank " << p;
  }
  go(comm, me, n);
  if (me == 0) {
    const auto start = std::chrono::steady_clock::now();
    while (probe(comm, 1) != 1 &&
           std::chrono::steady_clock::now() - start < std::chrono::seconds(20))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(probe(comm, 1), 1) << "rank 1's send never showed";
    for (int other = 2; other < n; other++) EXPECT_EQ(probe(comm, other), 0) << other;
    std::vector<int32_t> got(count, -1);
    ASSERT_EQ(ncclRecv(got.data(), count, ncclInt32, 1, comm, nullptr), ncclSuccess);
    for (size_t i = 0; i < count; i++)
      if (got[i] != static_cast<int32_t>(7 * i + 1))
        return ctx.fail("element " + std::to_string(i));
    EXPECT_EQ(probe(comm, 1), 0) << "data still reported after the receive";
  } else if (me == 1) {
    std::vector<int32_t> mine(count);
    for (size_t i = 0; i < count; i++) mine[i] = static_cast<int32_t>(7 * i + 1);
    ASSERT_EQ(ncclSend(mine.data(), count, ncclInt32, 0, comm, nullptr), ncclSuccess);
  }
  int arrived = 0;
  EXPECT_EQ(braidCommProbe(comm, me, &arrived), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("peer=" + std::to_string(me)),
            std::string::npos);
  EXPECT_EQ(braidCommProbe(comm, n, &arrived), ncclInvalidArgument);
  EXPECT_EQ(braidCommProbe(comm, (me + 1) % n, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("arrived is NULL"), std::string::npos);
  go(comm, me, n);
  int32_t one = 1, sum = 0;
  ASSERT_EQ(ncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(sum, n);
  ncclCommDestroy(comm);
}

braid::test::RunOptions options(const char* transports) {
  braid::test::RunOptions o;
  o.timeoutS = 60;
  o.env = {{"BRAID_TIMEOUT_S", "30"}};
  if (transports) o.env.push_back({"BRAID_TRANSPORTS", transports});
  return o;
}

TEST(Probe, Threads) {
  for (int n : {2, 3})
    BRAID_EXPECT_ALL_RANKS_OK(braid::test::runThreads(n, probeThenReceive, options(nullptr)));
}

TEST(Probe, ThreadsOverTcp) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runThreads(3, probeThenReceive, options("tcp")));
}

TEST(Probe, Processes) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runProcesses(3, probeThenReceive, options(nullptr)));
}

}  // namespace
