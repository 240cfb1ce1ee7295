// GradSync with ranks as forked processes (shared memory between them): averages with copies and
// views, the fp16 wire, accumulation and the rebuild; and cross-rank errors that must reach
// every process instead of leaving one waiting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gradsync/gradsync_test_util.h"

namespace braid::gradsync_test {
namespace {

using test::RankContext;

test::RunOptions quick() {
  test::RunOptions o;
  o.timeoutS = 60;
  o.env = {{"BRAID_TIMEOUT_S", "20"}};
  return o;
}

TEST(GradSyncProcesses, Averages) {
  Scenario copies;
  copies.model = oddModel();
  copies.options.firstBucketCapBytes = 64;
  copies.options.bucketCapBytes = 4096;
  copies.syncPattern = {true, false, true};
  Scenario views = copies;
  views.options.gradientsAsBucketViews = true;
  views.options.averaging = Averaging::kPreMulSum;
  views.options.wire = WireFormat::kFloat16;
  for (const Scenario* s : {&copies, &views}) {
    auto report = test::runProcesses(
        3, [&](RankContext& ctx) { runScenario(ctx, *s); }, quick());
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

// Buckets live in shared memory registered with the communicator, so once a bucket reaches the
// zero-copy size (lowered here to one KiB) its allreduce reads every rank's bucket where it lies,
// with the averages as exact as through the FIFOs. Each rank's log names the algorithm of every
// collective it ran, and says when ZeroCopy found a buffer unregistered and handed the call on.
TEST(GradSyncProcesses, BucketsAreReadInPlace) {
  Scenario s;
  s.model = {{4099, ncclFloat32}, {1031, ncclFloat32}};  // one bucket of 5130 floats
  s.options.firstBucketCapBytes = 1 << 20;
  s.options.bucketCapBytes = 1 << 20;
  char dir[] = "/tmp/braid-gradsync-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  test::RunOptions options = quick();
  options.env.push_back({"BRAID_ZERO_COPY_MIN_BYTES", "1024"});
  options.env.push_back({"NCCL_DEBUG", "INFO"});
  options.env.push_back({"NCCL_DEBUG_SUBSYS", "COLL"});
  options.env.push_back({"NCCL_DEBUG_FILE", std::string(dir) + "/rank.%p"});
  auto report = test::runProcesses(
      3, [&](RankContext& ctx) { runScenario(ctx, s); }, options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  int buckets = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream log(entry.path());
    for (std::string line; std::getline(log, line);) {
      EXPECT_EQ(line.find("not registered"), std::string::npos) << line;
      if (line.find("AllReduce:") == std::string::npos ||
          line.find("count 5130 ") == std::string::npos)
        continue;
      buckets++;
      EXPECT_NE(line.find("algorithm ZeroCopy"), std::string::npos) << line;
    }
  }
  std::filesystem::remove_all(dir);
  EXPECT_EQ(buckets, 3 * 3) << "every rank's bucket, in each of the three steps";
}

TEST(GradSyncProcesses, ModelMismatchFailsEveryRank) {
  auto report = test::runProcesses(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        {
          std::vector<GradSpec> model = {{5, ncclFloat32}, {ctx.rank() ? 9u : 8u, ncclFloat32}};
          Buffers buffers(model);
          GradSync sync(comm);
          int i;
          for (int g = 0; g < 2; g++)
            sync.addGradient({buffers.data(g), model[g].count, model[g].dtype},
                             "layer" + std::to_string(g), &i);
          if (sync.finalize() != ncclInvalidUsage ||
              sync.lastError().find("gradient 1 ('layer1') differs across ranks: rank 0 has 8 x "
                                    "float32, rank 1 has 9 x float32") == std::string::npos)
            ctx.fail("finalize: " + sync.lastError());
        }
        ncclCommDestroy(comm);
      },
      quick());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(GradSyncProcesses, NeverMarkedFailsEveryRank) {
  auto report = test::runProcesses(
      3,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        {
          std::vector<GradSpec> model(3, GradSpec{1000, ncclFloat32});
          Buffers buffers(model);
          GradSyncOptions o;
          o.firstBucketCapBytes = o.bucketCapBytes = 4000;
          GradSync sync(comm, o);
          if (!registerModel(ctx, sync, model, &buffers)) return;
          sync.markReady(2);
          if (ctx.rank() != 1) sync.markReady(1);
          sync.markReady(0);
          if (sync.finish() == ncclSuccess ||
              sync.lastError().find("1 ('g1')") == std::string::npos)
            ctx.fail("finish: " + sync.lastError());
        }
        ncclCommDestroy(comm);
      },
      quick());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// A rank dies in the middle of a step, after its first bucket was queued: the survivors'
// finish() returns an error (the communicator reports the lost peer) instead of waiting forever.
TEST(GradSyncProcesses, PeerDyingMidStepIsAnError) {
  auto report = test::runProcesses(
      3,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        std::vector<GradSpec> model(4, GradSpec{5000, ncclFloat32});
        Buffers buffers(model);
        GradSyncOptions o;
        o.firstBucketCapBytes = o.bucketCapBytes = 20000;  // one gradient per bucket
        GradSync sync(comm, o);
        if (!registerModel(ctx, sync, model, &buffers)) return;
        sync.markReady(3);
        sync.markReady(2);
        if (ctx.rank() == 1) _exit(3);
        sync.markReady(1);
        sync.markReady(0);
        auto start = std::chrono::steady_clock::now();
        if (sync.finish() == ncclSuccess) ctx.fail("finish succeeded without rank 1");
        double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ctx.report("error", sync.lastError());
        ctx.report("seconds", std::to_string(seconds));
        // The communicator is broken: abort rather than destroy.
        ncclCommAbort(comm);
      },
      quick());
  ASSERT_EQ(report.ranks.size(), 3u) << report.describe();
  EXPECT_EQ(report.ranks[1].outcome, test::Outcome::kExited) << report.describe();
  for (int r : {0, 2}) {
    EXPECT_EQ(report.ranks[r].outcome, test::Outcome::kOk) << report.describe();
    EXPECT_LT(std::stod("0" + report.ranks[r].values["seconds"]), 30.0) << report.describe();
    std::printf("  rank %d: %s\n", r, report.ranks[r].values["error"].c_str());
  }
}

}  // namespace
}  // namespace braid::gradsync_test
