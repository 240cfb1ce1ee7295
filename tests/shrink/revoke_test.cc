// ncclCommRevoke from another thread ends a call blocked on the communicator within a second
// (ncclInvalidUsage), and the revoked communicator can still be shrunk: the survivors' new
// communicator works although the interrupted allreduce left stale slots in the connections.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"
#include "shrink/shrink_test_util.h"

namespace braid::shrinktest {
namespace {

using test::RankContext;

TEST(Revoke, EndsABlockedCallAndTheSurvivorsShrink) {
  std::atomic<int> revokedRanks{0};
  std::atomic<bool> shrunk{false};
  auto report = test::runThreads(3, [&](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    const int me = ctx.rank();
    if (std::string e = allReduceChecked(comm, me, {0, 1, 2}, 0); !e.empty())
      return ctx.fail("before revoke: " + e);
    if (me == 0) {
      // Alone in an allreduce: blocked until the revoke from the other thread.
      const size_t count = 300007;
      std::vector<int32_t> buf(count, 1);
      double revokedAt = 0;
      std::thread revoker([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        revokedAt = now();
        if (ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess)
          ctx.fail(std::string("revoke: ") + ncclGetLastError(comm));
      });
      ncclResult_t r =
          ncclAllReduce(buf.data(), buf.data(), count, ncclInt32, ncclSum, comm, nullptr);
      const double endedAt = now();
      revoker.join();
      if (r != ncclInvalidUsage)
        ctx.fail("the blocked allreduce returned " + std::to_string(r) +
                 ", expected ncclInvalidUsage");
      ctx.report("blocked_call_s_after_revoke", std::to_string(endedAt - revokedAt));
      if (endedAt - revokedAt > 1.0)
        ctx.fail("the blocked allreduce ended " + std::to_string(endedAt - revokedAt) +
                 " s after the revoke");
    } else if (me == 1) {
      for (int ms = 0; ms < 60000 && revokedRanks.load() == 0; ms++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (me == 2) {  // excluded: leaves once the others have their new communicator
      for (int ms = 0; ms < 60000 && !shrunk.load(); ms++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ncclCommDestroy(comm);
      return;
    }
    if (me == 1 && ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess)
      ctx.fail(std::string("revoke: ") + ncclGetLastError(comm));
    revokedRanks.fetch_add(1);
    int x = 1;
    if (ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, nullptr) != ncclInvalidUsage)
      ctx.fail("an allreduce on a revoked communicator was not refused");
    int drop = 2;
    ncclComm_t child = nullptr;
    if (ncclCommShrink(comm, &drop, 1, &child, nullptr, NCCL_SHRINK_DEFAULT) != ncclSuccess) {
      ctx.fail(std::string("shrink after revoke: ") + ncclGetLastError(comm));
    } else {
      if (std::string e = allReduceChecked(child, me, {0, 1}, 1); !e.empty())
        ctx.fail("child: " + e);
      ncclCommDestroy(child);
    }
    if (revokedRanks.fetch_add(1) == 3) shrunk.store(true);
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
  if (report.ok()) {
    EXPECT_NE(report.ranks[0].values.count("blocked_call_s_after_revoke"), 0u);
  }
}

// Work queued on a host stream is ended by the revoke too: an allreduce whose peer never comes
// is blocked on the stream's thread; the revoke returns within a second and the stream reports
// the failure.
TEST(Revoke, EndsHostStreamWork) {
  std::atomic<bool> revoked{false};
  auto report = test::runThreads(2, [&revoked](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    if (ctx.rank() == 0) {
      braidStream_t stream = nullptr;
      if (braidStreamCreate(&stream) != ncclSuccess) return ctx.fail("braidStreamCreate");
      std::vector<int32_t> buf(300007, 1);
      if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclInt32, ncclSum, comm,
                        braidStreamAsCuda(stream)) != ncclSuccess)
        ctx.fail(std::string("queueing on the stream: ") + ncclGetLastError(comm));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const double start = now();
      if (ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) != ncclSuccess)
        ctx.fail(std::string("revoke: ") + ncclGetLastError(comm));
      if (now() - start > 1.0)
        ctx.fail("revoke took " + std::to_string(now() - start) + " s with stream work queued");
      if (braidStreamSynchronize(stream) == ncclSuccess)
        ctx.fail("the stream's interrupted allreduce reported success");
      braidStreamDestroy(stream);
      revoked.store(true);
    } else {  // rank 0 sends into this rank's connections until its revoke: stay until then
      for (int ms = 0; ms < 60000 && !revoked.load(); ms++)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::shrinktest
