// GradSync averages (threads as ranks): every layout option and averaging method at 1, 2, 3 and
// 5 ranks on a model of odd sizes and mixed types, ranks that finish gradients in different
// orders, buckets launched in order as soon as they are complete, the rebuild after the first
// step, accumulation over no-sync steps, and the step statistics. Every element is checked
// against NCCL's average of the known inputs (each rank's value times 1/n rounded to the type,
// rounded, summed), computed in float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "gradsync/gradsync_test_util.h"

namespace braid::gradsync_test {
namespace {

using test::RankContext;

GradSyncOptions smallBuckets() {
  GradSyncOptions o;
  o.firstBucketCapBytes = 64;  // the first bucket takes one or two small gradients
  o.bucketCapBytes = 4096;     // the 4099-float gradient is larger: a bucket of its own
  return o;
}

void expectAllRanksRun(int n, const Scenario& s) {
  auto report = test::runThreads(n, [&](RankContext& ctx) { runScenario(ctx, s); });
  BRAID_EXPECT_ALL_RANKS_OK(report) << " at " << n << " ranks";
}

TEST(GradSyncAverage, EveryLayoutAndAveragingAtOddRankCounts) {
  for (bool views : {false, true}) {
    for (Averaging averaging : {Averaging::kAvgOp, Averaging::kPreMulSum}) {
      Scenario s;
      s.model = oddModel();
      s.options = smallBuckets();
      s.options.gradientsAsBucketViews = views;
      s.options.averaging = averaging;
      s.afterFinalize = [](RankContext& ctx, GradSync& sync) {
        // Gradients 4 (1031 floats) and 6 (4099 floats) exceed the 4 KiB cap: buckets of one.
        for (int big : {4, 6})
          for (const auto& bucket : sync.bucketLayout())
            if (std::find(bucket.begin(), bucket.end(), big) != bucket.end() && bucket.size() != 1)
              ctx.fail("gradient " + std::to_string(big) + " shares a bucket");
      };
      for (int n : {1, 2, 3, 5}) {
        SCOPED_TRACE(std::string(views ? "views" : "copies") + ", " +
                     (averaging == Averaging::kAvgOp ? "ncclAvg" : "premulsum"));
        expectAllRanksRun(n, s);
      }
    }
  }
}

TEST(GradSyncAverage, DefaultCapsOneBucketPerDtype) {
  Scenario s;
  s.model = oddModel();
  s.afterFinish = [](RankContext& ctx, GradSync& sync, int) {
    // Under 1 MiB in all: one bucket for each of the four dtypes.
    if (sync.bucketLayout().size() != 4) ctx.fail("expected 4 buckets with DDP's caps");
  };
  expectAllRanksRun(3, s);
}

// Each rank marks its gradients in its own order, different every step: buckets must still be
// reduced in bucket order on every rank (equal-sized buckets would otherwise be summed with the
// wrong partners without any error).
TEST(GradSyncAverage, RanksMarkingInDifferentOrders) {
  for (bool rebuild : {false, true}) {
    Scenario s;
    s.model.assign(10, GradSpec{64, ncclFloat32});
    s.options.firstBucketCapBytes = 512;
    s.options.bucketCapBytes = 512;  // two gradients per bucket: five equal buckets
    s.options.rebuildBucketsAfterFirstStep = rebuild;
    s.syncPattern = {true, true, true, true};
    s.markOrder = [](int rank, int step, int gradients) {
      std::vector<int> order(gradients);
      for (int g = 0; g < gradients; g++) order[g] = g;
      std::rotate(order.begin(), order.begin() + (3 * rank + step) % gradients, order.end());
      if ((rank + step) % 2) std::reverse(order.begin(), order.end());
      return order;
    };
    expectAllRanksRun(3, s);
    expectAllRanksRun(2, s);
  }
}

// A comm hook makes the stream thread's progress observable without racing on the data: the
// bucket completed second must not run before the first, and both must run while backward is
// still going (before finish()).
TEST(GradSyncAverage, BucketsRunInOrderAsSoonAsComplete) {
  auto report = test::runThreads(2, [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    {
      GradSyncOptions o;
      o.firstBucketCapBytes = o.bucketCapBytes = 1024;  // one 256-float gradient per bucket
      o.rebuildBucketsAfterFirstStep = false;
      GradSync sync(comm, o);
      std::vector<GradSpec> model(4, GradSpec{256, ncclFloat32});
      Buffers buffers(model);
      if (!registerModel(ctx, sync, model, &buffers)) return;
      std::atomic<int> ran{0};
      std::vector<int> runOrder;
      sync.setCommHook([&](ncclComm_t c, Bucket& b) {
        runOrder.push_back(b.index);
        ncclResult_t r = ncclAllReduce(b.data, b.data, b.count, b.dtype, ncclAvg, c, nullptr);
        ran++;
        return r;
      });
      for (int g = 0; g < 4; g++)
        for (size_t i = 0; i < 256; i++)
          storeValue(buffers.data(g), i, ncclFloat32,
                     inputValue(9, ctx.rank(), g, i, 0, ncclFloat32));
      // Layout (reverse registration): bucket 0 = {3}, 1 = {2}, 2 = {1}, 3 = {0}.
      sync.markReady(2);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (ran.load() != 0) ctx.fail("bucket 1 ran before bucket 0 was complete");
      sync.markReady(3);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (ran.load() < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (ran.load() != 2) ctx.fail("buckets 0 and 1 did not run before finish()");
      sync.markReady(1);
      sync.markReady(0);
      if (sync.finish() != ncclSuccess) return ctx.fail("finish: " + sync.lastError());
      if (runOrder != std::vector<int>{0, 1, 2, 3}) ctx.fail("buckets ran out of order");
      for (int g = 0; g < 4; g++)
        for (size_t i = 0; i < 256; i++) {
          double expected =
              (inputValue(9, 0, g, i, 0, ncclFloat32) + inputValue(9, 1, g, i, 0, ncclFloat32)) / 2;
          if (loadValue(buffers.data(g), i, ncclFloat32) != expected)
            return ctx.fail("gradient " + std::to_string(g) + " element " + std::to_string(i));
        }
    }
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// After the first synced step the buckets follow the order rank 0 marked gradients in (rank 1
// marked them in another order: rank 0's wins, so all ranks build the same buckets).
TEST(GradSyncAverage, RebuildFollowsRankZeroReadyOrder) {
  const std::vector<int> rank0Order = {3, 6, 0, 7, 1, 5, 2, 4};
  for (bool views : {false, true}) {
    Scenario s;
    s.model.assign(8, GradSpec{16, ncclFloat32});
    s.options.firstBucketCapBytes = s.options.bucketCapBytes = 128;  // two gradients each
    s.options.gradientsAsBucketViews = views;
    s.markOrder = [&](int rank, int, int) {
      std::vector<int> order = rank0Order;
      if (rank == 1) std::reverse(order.begin(), order.end());
      if (rank == 2) std::sort(order.begin(), order.end());
      return order;
    };
    s.afterFinish = [](RankContext& ctx, GradSync& sync, int) {
      const std::vector<std::vector<int>> expected = {{3, 6}, {0, 7}, {1, 5}, {2, 4}};
      if (sync.bucketLayout() != expected) ctx.fail("layout after the rebuild is not rank 0's");
    };
    s.afterFinalize = [](RankContext& ctx, GradSync& sync) {
      if (sync.bucketLayout() != std::vector<std::vector<int>>{{7, 6}, {5, 4}, {3, 2}, {1, 0}})
        ctx.fail("initial layout is not reverse registration order");
    };
    auto report = test::runThreads(3, [&](RankContext& ctx) { runScenario(ctx, s); });
    BRAID_EXPECT_ALL_RANKS_OK(report) << (views ? "views" : "copies");
  }
}

TEST(GradSyncAverage, AccumulationOverNoSyncSteps) {
  for (bool views : {false, true}) {
    Scenario s;
    s.model = oddModel();
    s.options = smallBuckets();
    s.options.gradientsAsBucketViews = views;
    s.syncPattern = {false, false, true, true, false, true};
    for (int n : {1, 2, 3}) {
      SCOPED_TRACE(views ? "views" : "copies");
      expectAllRanksRun(n, s);
    }
  }
}

TEST(GradSyncAverage, NoSyncScopeRestoresTheMode) {
  auto report = test::runThreads(1, [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    {
      GradSync sync(comm);
      {
        GradSync::NoSync scope(sync);
        if (sync.syncEnabled()) ctx.fail("NoSync did not disable sync");
        { GradSync::NoSync nested(sync); }
        if (sync.syncEnabled()) ctx.fail("a nested NoSync re-enabled sync");
      }
      if (!sync.syncEnabled()) ctx.fail("NoSync did not restore sync");
    }
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(GradSyncAverage, StepStatistics) {
  Scenario s;
  s.model = oddModel();
  s.options = smallBuckets();
  s.options.rebuildBucketsAfterFirstStep = false;
  s.syncPattern = {true, false, true};
  size_t totalBytes = 0;
  for (const GradSpec& g : s.model) totalBytes += g.count * dtypeBytes(g.dtype);
  s.afterFinish = [&](RankContext& ctx, GradSync& sync, int step) {
    const StepStats& st = sync.lastStep();
    if (step == 1) {
      if (st.buckets != 0 || st.bytesReduced != 0 || st.wireBytes != 0)
        ctx.fail("a no-sync step reported communication");
      return;
    }
    int nonEmpty = 0;
    for (const auto& bucket : sync.bucketLayout()) {
      size_t count = 0;
      for (int g : bucket) count += s.model[g].count;
      nonEmpty += count > 0;
    }
    if (st.buckets != nonEmpty)
      ctx.fail("buckets " + std::to_string(st.buckets) + ", expected " + std::to_string(nonEmpty));
    if (st.bytesReduced != totalBytes || st.wireBytes != totalBytes)
      ctx.fail("bytesReduced " + std::to_string(st.bytesReduced) + ", wireBytes " +
               std::to_string(st.wireBytes) + ", expected " + std::to_string(totalBytes));
    if (!(st.finishWaitSeconds >= 0 && st.finishWaitSeconds < 60))
      ctx.fail("finishWaitSeconds " + std::to_string(st.finishWaitSeconds));
  };
  expectAllRanksRun(2, s);
}

}  // namespace
}  // namespace braid::gradsync_test
