// Connections on first use (BRAID_CONNECT=auto, the default): beyond BRAID_CONNECT_ALL_MAX_RANKS
// ranks (32) init connects only the ring's, trees' and hierarchical neighbours, and a send or
// receive to any other peer connects that pair when it first runs. Exact results for collectives
// and for point-to-point patterns that need non-neighbours (a shift by half the ranks, an
// alltoall), over same-process, shared-memory and TCP connections; BRAID_CONNECT=neighbours refuses
// them with an error naming the pair; BRAID_CONNECT=all and values that are not a mode. Most tests
// run 9 ranks with the threshold lowered to 4 (the same code paths, and quick enough for the TSan
// pass); one runs 36 ranks at the default threshold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

constexpr int kRanks = 9;                  // beyond kAllMaxRanks
constexpr const char* kAllMaxRanks = "4";  // BRAID_CONNECT_ALL_MAX_RANKS in these tests
constexpr int kDefaultBeyond = 36;         // beyond the default threshold (32)

int32_t value(int from, int to, size_t i) {
  return static_cast<int32_t>(from * 100003 + to * 7919 + i);
}

bool ok(RankContext& ctx, ncclComm_t comm, ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return true;
  ctx.fail(what + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(comm));
  return false;
}

// An allreduce (the ring's neighbours), then a shift by n/2 and an alltoall (pairs init did not
// connect), each twice: the second time over the connections the first one made.
void farPeers(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  const size_t count = 1031;
  std::vector<int32_t> in(count, me + 1), out(count, -1);
  if (!ok(ctx, comm, ncclAllReduce(in.data(), out.data(), count, ncclInt32, ncclSum, comm, nullptr),
          "allreduce"))
    return;
  for (size_t i = 0; i < count; i++)
    if (out[i] != n * (n + 1) / 2) return ctx.fail("allreduce: element " + std::to_string(i));
  for (int round = 0; round < 2; round++) {
    const std::string tag = " round " + std::to_string(round);
    const int to = (me + n / 2) % n, from = (me + n - n / 2) % n;
    std::vector<int32_t> send(count), recv(count, -1);
    for (size_t i = 0; i < count; i++) send[i] = value(me, to, i);
    ncclGroupStart();
    ncclSend(send.data(), count, ncclInt32, to, comm, nullptr);
    ncclRecv(recv.data(), count, ncclInt32, from, comm, nullptr);
    if (!ok(ctx, comm, ncclGroupEnd(), "shift" + tag)) return;
    for (size_t i = 0; i < count; i++)
      if (recv[i] != value(from, me, i))
        return ctx.fail("shift" + tag + ": element " + std::to_string(i));
    const size_t block = 17;
    std::vector<int32_t> all(block * n), got(block * n, -1);
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < block; i++) all[p * block + i] = value(me, p, i);
    if (!ok(ctx, comm, ncclAlltoAll(all.data(), got.data(), block, ncclInt32, comm, nullptr),
            "alltoall" + tag))
      return;
    for (int p = 0; p < n; p++)
      for (size_t i = 0; i < block; i++)
        if (got[p * block + i] != value(p, me, i))
          return ctx.fail("alltoall" + tag + ": from rank " + std::to_string(p));
  }
  ncclCommDestroy(comm);
}

braid::test::RunOptions options(std::vector<std::pair<std::string, std::string>> env) {
  braid::test::RunOptions o;
  o.timeoutS = 240;
  o.env = std::move(env);
  o.env.push_back({"BRAID_SLOT_BYTES", "4096"});
  o.env.push_back({"BRAID_NSLOTS", "2"});
  o.env.push_back({"BRAID_TIMEOUT_S", "60"});
  if (std::none_of(o.env.begin(), o.env.end(),
                   [](const auto& kv) { return kv.first == "BRAID_CONNECT_ALL_MAX_RANKS"; }))
    o.env.push_back({"BRAID_CONNECT_ALL_MAX_RANKS", kAllMaxRanks});
  return o;
}

TEST(ConnectOnFirstUse, Threads) {
  auto report = braid::test::runThreads(kRanks, farPeers, options({}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

TEST(ConnectOnFirstUse, ThreadsBeyondTheDefaultThreshold) {
  auto o = options({});
  std::erase_if(o.env, [](const auto& kv) { return kv.first == "BRAID_CONNECT_ALL_MAX_RANKS"; });
  auto report = braid::test::runThreads(kDefaultBeyond, farPeers, o);
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

TEST(ConnectOnFirstUse, ThreadsOverTcp) {
  auto report = braid::test::runThreads(kRanks, farPeers, options({{"BRAID_TRANSPORTS", "tcp"}}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

TEST(ConnectOnFirstUse, Processes) {
  auto report = braid::test::runProcesses(kRanks, farPeers, options({}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

TEST(ConnectOnFirstUse, EveryPairAtInitStillWorks) {
  auto report = braid::test::runThreads(kRanks, farPeers, options({{"BRAID_CONNECT", "all"}}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

// Under neighbours, a send to a peer init did not connect is an error that names the pair, not
// a hang; collectives still run.
TEST(ConnectOnFirstUse, NeighboursOnlyRefusesFarPeers) {
  auto report = braid::test::runThreads(
      kRanks,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        const int n = ctx.nranks(), me = ctx.rank();
        int32_t x = me, sum = -1;
        ok(ctx, comm, ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, comm, nullptr), "allreduce");
        if (sum != n * (n - 1) / 2) ctx.fail("allreduce: " + std::to_string(sum));
        int32_t send = me, recv = -1;
        ncclGroupStart();
        ncclSend(&send, 1, ncclInt32, (me + n / 2) % n, comm, nullptr);
        ncclRecv(&recv, 1, ncclInt32, (me + n - n / 2) % n, comm, nullptr);
        const ncclResult_t r = ncclGroupEnd();
        const std::string text = ncclGetLastError(comm);
        if (r != ncclInvalidUsage || text.find("has no connection to rank") == std::string::npos)
          ctx.fail("far send: " + std::string(ncclGetErrorString(r)) + ": " + text);
        ncclCommAbort(comm);
      },
      options({{"BRAID_CONNECT", "neighbours"}}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

TEST(ConnectOnFirstUse, ThresholdOutOfRangeIsAnInvalidArgument) {
  auto report = braid::test::runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = nullptr;
        const ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
        const std::string text = ncclGetLastError(nullptr);
        if (r != ncclInvalidArgument ||
            text.find("BRAID_CONNECT_ALL_MAX_RANKS=0") == std::string::npos)
          ctx.fail("init: " + std::string(ncclGetErrorString(r)) + ": " + text);
        if (r == ncclSuccess) ncclCommDestroy(comm);
      },
      options({{"BRAID_CONNECT_ALL_MAX_RANKS", "0"}}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

TEST(ConnectOnFirstUse, UnknownModeIsAnInvalidArgument) {
  auto report = braid::test::runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = nullptr;
        const ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
        const std::string text = ncclGetLastError(nullptr);
        if (r != ncclInvalidArgument || text.find("BRAID_CONNECT=some") == std::string::npos)
          ctx.fail("init: " + std::string(ncclGetErrorString(r)) + ": " + text);
        if (r == ncclSuccess) ncclCommDestroy(comm);
      },
      options({{"BRAID_CONNECT", "some"}}));
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

}  // namespace
