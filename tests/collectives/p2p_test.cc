// Point-to-point and the collectives built on it: send/recv patterns inside groups (ring
// exchange, every pair at once, sending to oneself), AlltoAll, Gather and Scatter with every
// root, checked element by element; mismatched counts fail with a message instead of hanging.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

// Element i of the block rank `from` sends to rank `to`.
int32_t value(int from, int to, size_t i) {
  return static_cast<int32_t>(from * 1000003 + to * 7919 + i);
}

void expectBlock(RankContext& ctx, const std::string& what, const int32_t* got, int from, int to,
                 size_t count) {
  for (size_t i = 0; i < count; i++)
    if (got[i] != value(from, to, i)) {
      ctx.fail(what + ": element " + std::to_string(i) + " from rank " + std::to_string(from) +
               " is " + std::to_string(got[i]) + ", expected " +
               std::to_string(value(from, to, i)));
      return;
    }
}

void check(RankContext& ctx, ncclComm_t comm, ncclResult_t r, const std::string& what) {
  if (r != ncclSuccess)
    ctx.fail(what + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(comm));
}

void patterns(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(5003)}) {
    std::string tag = " count " + std::to_string(count);
    // Ring exchange in one group: send to next, receive from previous.
    {
      int next = (me + 1) % n, prev = (me + n - 1) % n;
      std::vector<int32_t> out(count), in(count, -1);
      for (size_t i = 0; i < count; i++) out[i] = value(me, next, i);
      ncclGroupStart();
      ncclSend(out.data(), count, ncclInt32, next, comm, nullptr);
      ncclRecv(in.data(), count, ncclInt32, prev, comm, nullptr);
      check(ctx, comm, ncclGroupEnd(), "ring exchange" + tag);
      expectBlock(ctx, "ring exchange" + tag, in.data(), prev, me, count);
    }
    // Every pair at once, self included: receives posted before sends on purpose.
    {
      std::vector<std::vector<int32_t>> out(n, std::vector<int32_t>(count)),
          in(n, std::vector<int32_t>(count, -1));
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < count; i++) out[p][i] = value(me, p, i);
      ncclGroupStart();
      for (int p = 0; p < n; p++) ncclRecv(in[p].data(), count, ncclInt32, p, comm, nullptr);
      for (int p = n - 1; p >= 0; p--) ncclSend(out[p].data(), count, ncclInt32, p, comm, nullptr);
      check(ctx, comm, ncclGroupEnd(), "all pairs" + tag);
      for (int p = 0; p < n; p++) expectBlock(ctx, "all pairs" + tag, in[p].data(), p, me, count);
    }
    // AlltoAll.
    {
      std::vector<int32_t> out(count * n), in(count * n, -1);
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < count; i++) out[p * count + i] = value(me, p, i);
      check(ctx, comm, ncclAlltoAll(out.data(), in.data(), count, ncclInt32, comm, nullptr),
            "alltoall" + tag);
      for (int p = 0; p < n; p++)
        expectBlock(ctx, "alltoall" + tag, in.data() + p * count, p, me, count);
    }
    for (int root : {0, n / 2, n - 1}) {
      std::string rt = tag + " root " + std::to_string(root);
      // Gather: the root gets every rank's block in rank order.
      std::vector<int32_t> mine(count), all(count * n, -1);
      for (size_t i = 0; i < count; i++) mine[i] = value(me, root, i);
      check(ctx, comm, ncclGather(mine.data(), all.data(), count, ncclInt32, root, comm, nullptr),
            "gather" + rt);
      if (me == root)
        for (int p = 0; p < n; p++)
          expectBlock(ctx, "gather" + rt, all.data() + p * count, p, root, count);
      // Scatter: block p of the root's buffer goes to rank p.
      std::vector<int32_t> blocks(count * n), got(count, -1);
      for (int p = 0; p < n; p++)
        for (size_t i = 0; i < count; i++) blocks[p * count + i] = value(root, p, i);
      check(ctx, comm,
            ncclScatter(blocks.data(), got.data(), count, ncclInt32, root, comm, nullptr),
            "scatter" + rt);
      expectBlock(ctx, "scatter" + rt, got.data(), root, me, count);
    }
  }
  ncclCommDestroy(comm);
}

braid::test::RunOptions options(std::vector<std::pair<std::string, std::string>> env) {
  braid::test::RunOptions o;
  o.timeoutS = 300;
  o.env = std::move(env);
  return o;
}

TEST(PointToPoint, Threads) {
  for (int n : {1, 2, 3, 5}) {
    auto report = braid::test::runThreads(n, patterns, options({{"BRAID_SLOT_BYTES", "4096"}}));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(PointToPoint, ThreadsTcp) {
  auto report = braid::test::runThreads(
      3, patterns, options({{"BRAID_SLOT_BYTES", "4096"}, {"BRAID_TRANSPORTS", "tcp"}}));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(PointToPoint, Processes) {
  auto report = braid::test::runProcesses(4, patterns, options({{"BRAID_SLOT_BYTES", "4096"}}));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Hundreds of messages to one peer in one group, of sizes that alternate between one slot and
// several: each must meet its own receive, in posting order. (A later message once took a slot
// freed while the batch's pass was past an earlier one: "operation mismatch" at random.)
void manyMessagesToOnePeer(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  constexpr int kMessages = 300;
  auto countOf = [](int m) { return static_cast<size_t>(m % 3 == 0 ? 2500 : m % 5); };
  std::vector<std::vector<int32_t>> out(kMessages), in(kMessages);
  ncclGroupStart();
  for (int m = 0; m < kMessages; ++m) {
    out[m].resize(countOf(m));
    in[m].assign(countOf(m), -1);
    for (size_t i = 0; i < out[m].size(); ++i) out[m][i] = value(me, next, i + m);
    ncclSend(out[m].data(), out[m].size(), ncclInt32, next, comm, nullptr);
    ncclRecv(in[m].data(), in[m].size(), ncclInt32, prev, comm, nullptr);
  }
  check(ctx, comm, ncclGroupEnd(), "300 messages to one peer");
  for (int m = 0; m < kMessages; ++m)
    for (size_t i = 0; i < in[m].size(); ++i)
      if (in[m][i] != value(prev, me, i + m)) {
        ctx.fail("message " + std::to_string(m) + " element " + std::to_string(i) + " is " +
                 std::to_string(in[m][i]));
        return;
      }
  ncclCommDestroy(comm);
}

TEST(PointToPoint, ManyMessagesToOnePeerKeepTheirOrder) {
  for (int n : {2, 3}) {
    auto report =
        braid::test::runThreads(n, manyMessagesToOnePeer, options({{"BRAID_SLOT_BYTES", "4096"}}));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
  auto report =
      braid::test::runProcesses(2, manyMessagesToOnePeer, options({{"BRAID_SLOT_BYTES", "4096"}}));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(PointToPoint, MismatchedCountsFailInsteadOfHanging) {
  auto report = braid::test::runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        std::vector<int32_t> buf(64, 1);
        if (ctx.rank() == 0) {
          ncclSend(buf.data(), 10, ncclInt32, 1, comm, nullptr);
        } else {
          ncclResult_t r = ncclRecv(buf.data(), 20, ncclInt32, 0, comm, nullptr);
          std::string text = ncclGetLastError(comm);
          if (r == ncclSuccess)
            ctx.fail("a receive of 20 elements matched a send of 10");
          else if (text.find("mismatch") == std::string::npos)
            ctx.fail("unexpected error text: " + text);
        }
        ncclCommDestroy(comm);
      },
      options({{"BRAID_TIMEOUT_S", "5"}}));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace

namespace {

TEST(Groups, EmptyAndCountZeroGroupsEndSuccessfully) {
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  ncclComm_t comms[2];
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  float buf[4] = {};
  ncclGroupStart();
  for (ncclComm_t c : comms) ncclAllGather(buf, buf, 0, ncclFloat32, c, nullptr);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage) << "an unmatched ncclGroupEnd must be refused";
  for (ncclComm_t c : comms) ncclCommDestroy(c);
}

}  // namespace
