// ncclCommSplit: colors, keys (reverse order), NCCL_SPLIT_NOCOLOR, and the new communicators
// working (an allreduce whose exact sum proves the membership) while the parent still works.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <string>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

void splitAndUse(RankContext& ctx) {
  ncclComm_t parent = ctx.initComm();
  if (!parent) return;
  const int n = ctx.nranks(), me = ctx.rank();
  // Color by parity; the last rank opts out; keys reverse the order.
  int color = me == n - 1 && n > 2 ? NCCL_SPLIT_NOCOLOR : me % 2;
  ncclComm_t child = nullptr;
  ncclResult_t r = ncclCommSplit(parent, color, -me, &child, nullptr);
  if (r != ncclSuccess) return ctx.fail(std::string("split: ") + ncclGetLastError(parent));
  if (color == NCCL_SPLIT_NOCOLOR) {
    if (child) ctx.fail("NCCL_SPLIT_NOCOLOR rank got a communicator");
  } else {
    std::vector<int> members;
    for (int q = n - 1; q >= 0; q--)
      if (!(q == n - 1 && n > 2) && q % 2 == color) members.push_back(q);
    int size = -1, rank = -1;
    ncclCommCount(child, &size);
    ncclCommUserRank(child, &rank);
    if (size != static_cast<int>(members.size()))
      ctx.fail("child size " + std::to_string(size) + ", expected " +
               std::to_string(members.size()));
    if (rank < 0 || rank >= size || members[rank] != me)
      ctx.fail("child rank " + std::to_string(rank) + " does not follow the reversed keys");
    // Sum of parent ranks over the child's members, computed by the child.
    int64_t mine = me, sum = -1;
    if (ncclAllReduce(&mine, &sum, 1, ncclInt64, ncclSum, child, nullptr) != ncclSuccess)
      ctx.fail(std::string("child allreduce: ") + ncclGetLastError(child));
    int64_t expect = 0;
    for (int q : members) expect += q;
    if (sum != expect)
      ctx.fail("child sum " + std::to_string(sum) + ", expected " + std::to_string(expect));
    ncclCommDestroy(child);
  }
  // The parent keeps working after the split.
  int64_t one = 1, total = 0;
  if (ncclAllReduce(&one, &total, 1, ncclInt64, ncclSum, parent, nullptr) != ncclSuccess ||
      total != n)
    ctx.fail("parent allreduce after split gave " + std::to_string(total));
  ncclCommDestroy(parent);
}

TEST(CommSplit, Threads) {
  for (int n : {1, 2, 5}) {
    auto report = braid::test::runThreads(n, splitAndUse);
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(CommSplit, Processes) {
  auto report = braid::test::runProcesses(4, splitAndUse);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(CommSplit, BadArguments) {
  auto report = braid::test::runThreads(1, [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    ncclComm_t child;
    if (ncclCommSplit(comm, -5, 0, &child, nullptr) != ncclInvalidArgument ||
        std::string(ncclGetLastError(comm)).find("color=-5") == std::string::npos)
      ctx.fail("negative color accepted or not named");
    if (ncclCommSplit(comm, 0, 0, nullptr, nullptr) != ncclInvalidArgument)
      ctx.fail("NULL newcomm accepted");
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace

namespace {

// braidBarrier: nobody leaves before the last rank arrives.
TEST(Extensions, BarrierHoldsEveryoneUntilTheLastArrives) {
  static std::atomic<int> arrived{0};
  arrived = 0;
  auto report = braid::test::runThreads(3, [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    if (ctx.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    arrived++;
    if (braidBarrier(comm) != ncclSuccess)
      ctx.fail(std::string("barrier: ") + ncclGetLastError(comm));
    if (arrived.load() != 3) ctx.fail("left the barrier before every rank arrived");
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// ncclCommInitRankScalable: every rank joins through the array of ids.
TEST(Extensions, InitRankScalableFormsOneCommunicator) {
  ncclUniqueId ids[2];
  ASSERT_EQ(ncclGetUniqueId(&ids[0]), ncclSuccess);
  ids[1] = ids[0];
  auto report = braid::test::runThreads(2, [&ids](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (ncclCommInitRankScalable(&comm, 2, ctx.rank(), 2, ids, nullptr) != ncclSuccess)
      return ctx.fail(std::string("init: ") + ncclGetLastError(nullptr));
    int64_t one = 1, total = 0;
    if (ncclAllReduce(&one, &total, 1, ncclInt64, ncclSum, comm, nullptr) != ncclSuccess ||
        total != 2)
      ctx.fail("allreduce on the scalable-init communicator gave " + std::to_string(total));
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
  ncclComm_t comm;
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 0, ids, nullptr), ncclInvalidArgument);
}

}  // namespace
