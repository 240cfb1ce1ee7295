// Non-blocking communicators (config.blocking = 0): init, allreduce, split, shrink and finalize
// return ncclInProgress and complete in the background; ncclCommGetAsyncError reads
// ncclInProgress until then and ncclSuccess (or the error) after. Several communicators are used
// at once from different threads; an init whose peer never comes reports the error, and
// ncclCommAbort ends it promptly.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"
#include "shrink/shrink_test_util.h"

namespace braid::shrinktest {
namespace {

using test::RankContext;

ncclConfig_t nonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Non-blocking init; "" and *comm set once it settled to ncclSuccess.
std::string initNonblocking(RankContext& ctx, ncclComm_t* comm) {
  ncclConfig_t config = nonblockingConfig();
  ncclResult_t r = ncclCommInitRankConfig(comm, ctx.nranks(), ctx.id(), ctx.rank(), &config);
  if (r != ncclInProgress)
    return "non-blocking init returned " + std::to_string(r) +
           " instead of ncclInProgress: " + ncclGetLastError(nullptr);
  if (!*comm) return "non-blocking init returned no handle";
  if (ncclResult_t s = settle(*comm); s != ncclSuccess)
    return "non-blocking init settled to " + std::to_string(s) + ": " + ncclGetLastError(*comm);
  return "";
}

TEST(Nonblocking, InitAllReduceFinalize) {
  auto report = test::runThreads(3, [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (std::string e = initNonblocking(ctx, &comm); !e.empty()) return ctx.fail(e);
    if (std::string e = allReduceChecked(comm, ctx.rank(), {0, 1, 2}, 0, true); !e.empty())
      ctx.fail(e);
    ncclResult_t r = ncclCommFinalize(comm);
    if (r != ncclInProgress && r != ncclSuccess)
      ctx.fail(std::string("finalize: ") + ncclGetLastError(comm));
    if (settle(comm) != ncclSuccess) ctx.fail("finalize did not settle to ncclSuccess");
    if (ncclCommDestroy(comm) != ncclSuccess)
      ctx.fail(std::string("destroy: ") + ncclGetLastError(nullptr));
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Calls queued back to back (outside groups) run in order: three allreduces and a point-to-point
// ring (each rank sends to the next, receives from the previous; small enough to be buffered),
// then one settle.
TEST(Nonblocking, QueuedCallsRunInOrder) {
  auto report = test::runThreads(3, [](RankContext& ctx) {
    ncclComm_t comm = nullptr;
    if (std::string e = initNonblocking(ctx, &comm); !e.empty()) return ctx.fail(e);
    const int me = ctx.rank(), n = 3;
    const size_t count = 1021;
    std::vector<int32_t> send(count), sums[3], ring(count, -7);
    for (size_t i = 0; i < count; i++) send[i] = contribution(me, i, 0);
    for (auto& out : sums) out.assign(count, -7);
    for (auto& out : sums)
      if (ncclAllReduce(send.data(), out.data(), count, ncclInt32, ncclSum, comm, nullptr) !=
          ncclInProgress)
        ctx.fail("a queued allreduce did not return ncclInProgress");
    if (ncclSend(send.data(), count, ncclInt32, (me + 1) % n, comm, nullptr) != ncclInProgress ||
        ncclRecv(ring.data(), count, ncclInt32, (me + n - 1) % n, comm, nullptr) != ncclInProgress)
      ctx.fail("point-to-point on a non-blocking communicator did not return ncclInProgress");
    if (ncclResult_t s = settle(comm); s != ncclSuccess)
      return ctx.fail("queued calls settled to " + std::to_string(s) + ": " +
                      ncclGetLastError(comm));
    for (size_t i = 0; i < count; i++) {
      const int32_t sum = contribution(0, i, 0) + contribution(1, i, 0) + contribution(2, i, 0);
      for (auto& out : sums)
        if (out[i] != sum) return ctx.fail("allreduce element " + std::to_string(i) + " wrong");
      if (ring[i] != contribution((me + n - 1) % n, i, 0))
        return ctx.fail("received element " + std::to_string(i) + " wrong");
    }
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Two non-blocking communicators per rank (the second split from the first), each driven by its
// own thread at the same time.
TEST(Nonblocking, TwoCommunicatorsFromTwoThreadsPerRank) {
  auto report = test::runThreads(3, [](RankContext& ctx) {
    ncclComm_t first = nullptr, second = nullptr;
    if (std::string e = initNonblocking(ctx, &first); !e.empty()) return ctx.fail(e);
    ncclResult_t r = ncclCommSplit(first, 0, ctx.rank(), &second, nullptr);
    if (r != ncclInProgress && r != ncclSuccess)
      return ctx.fail(std::string("split: ") + ncclGetLastError(first));
    if (settle(first) != ncclSuccess || !second)
      return ctx.fail(std::string("split did not settle: ") + ncclGetLastError(first));
    if (settle(second) != ncclSuccess) return ctx.fail("the split communicator is not ready");
    std::string problems[2];
    auto drive = [&](int which) {
      ncclComm_t comm = which == 0 ? first : second;
      for (int round = 0; round < 4 && problems[which].empty(); round++)
        problems[which] = allReduceChecked(comm, ctx.rank(), {0, 1, 2}, 10 * which + round, true);
    };
    std::thread other(drive, 1);
    drive(0);
    other.join();
    for (const std::string& p : problems)
      if (!p.empty()) ctx.fail(p);
    ncclCommDestroy(second);
    ncclCommDestroy(first);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Shrink of a non-blocking parent returns ncclInProgress; the child inherits non-blocking mode.
// A blocking parent shrunk with a non-blocking config gives a non-blocking child too.
TEST(Nonblocking, ShrinkInheritsOrTakesTheConfig) {
  auto report = test::runThreads(3, [](RankContext& ctx) {
    const int me = ctx.rank();
    ncclComm_t parent = nullptr;
    if (std::string e = initNonblocking(ctx, &parent); !e.empty()) return ctx.fail(e);
    if (me != 1) {
      int drop = 1;
      ncclComm_t child = nullptr;
      ncclResult_t r = ncclCommShrink(parent, &drop, 1, &child, nullptr, NCCL_SHRINK_DEFAULT);
      if (r != ncclInProgress)
        ctx.fail("shrink of a non-blocking parent returned " + std::to_string(r));
      if (settle(parent) != ncclSuccess || !child)
        return ctx.fail(std::string("shrink did not settle: ") + ncclGetLastError(parent));
      if (std::string e = allReduceChecked(child, me, {0, 2}, 1, true); !e.empty())
        ctx.fail("inherited non-blocking child: " + e);
      ncclCommDestroy(child);
    }
    ncclCommDestroy(parent);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);

  report = test::runThreads(3, [](RankContext& ctx) {
    const int me = ctx.rank();
    ncclComm_t parent = ctx.initComm();
    if (!parent) return;
    if (me != 0) {
      int drop = 0;
      ncclComm_t child = nullptr;
      ncclConfig_t config = nonblockingConfig();
      if (ncclCommShrink(parent, &drop, 1, &child, &config, NCCL_SHRINK_ABORT) != ncclSuccess)
        return ctx.fail(std::string("shrink: ") + ncclGetLastError(parent));
      if (std::string e = allReduceChecked(child, me, {1, 2}, 2, true); !e.empty())
        ctx.fail("child given a non-blocking config: " + e);
      ncclCommDestroy(child);
    }
    ncclCommDestroy(parent);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Rank 1 never comes: rank 0's non-blocking init reports the error through
// ncclCommGetAsyncError (with its reason in ncclGetLastError), and abort is prompt.
TEST(Nonblocking, InitErrorIsReportedAndAbortIsPrompt) {
  test::RunOptions options;
  options.env = {{"BRAID_TIMEOUT_S", "1"}};
  auto report = test::runThreads(
      2,
      [](RankContext& ctx) {
        if (ctx.rank() == 1) return;
        ncclComm_t comm = nullptr;
        ncclConfig_t config = nonblockingConfig();
        if (ncclCommInitRankConfig(&comm, 2, ctx.id(), 0, &config) != ncclInProgress || !comm)
          return ctx.fail("non-blocking init did not return ncclInProgress with a handle");
        ncclResult_t state = settle(comm, 20);
        if (state == ncclSuccess || state == ncclInProgress)
          ctx.fail("init without its peer settled to " + std::to_string(state));
        if (std::string(ncclGetLastError(comm)).empty())
          ctx.fail("ncclGetLastError is empty after the asynchronous error");
        double start = now();
        if (ncclCommAbort(comm) != ncclSuccess) ctx.fail("abort after a failed init");
        if (now() - start > 1) ctx.fail("abort took " + std::to_string(now() - start) + " s");
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);

  // Abort while the init is still waiting for its peer.
  report = test::runThreads(2, [](RankContext& ctx) {
    if (ctx.rank() == 1) return;
    ncclComm_t comm = nullptr;
    ncclConfig_t config = nonblockingConfig();
    if (ncclCommInitRankConfig(&comm, 2, ctx.id(), 0, &config) != ncclInProgress || !comm)
      return ctx.fail("non-blocking init did not return ncclInProgress with a handle");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    if (state != ncclInProgress) ctx.fail("init without its peer reads " + std::to_string(state));
    double start = now();
    if (ncclCommAbort(comm) != ncclSuccess) ctx.fail("abort during init");
    if (now() - start > 1)
      ctx.fail("abort during init took " + std::to_string(now() - start) + " s");
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::shrinktest
