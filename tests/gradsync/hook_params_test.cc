// Comm hooks (replacing the built-in allreduce, failing on one rank), broadcastParameters and
// verifyParametersEqual, as threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "gradsync/gradsync_test_util.h"

namespace braid::gradsync_test {
namespace {

using test::RankContext;

bool containsText(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GradSyncHook, ReplacesTheAllreduce) {
  for (int n : {1, 2, 3}) {
    auto report = test::runThreads(n, [](RankContext& ctx) {
      ncclComm_t comm = ctx.initComm();
      if (!comm) return;
      {
        GradSyncOptions o;
        o.firstBucketCapBytes = 64;
        o.bucketCapBytes = 4096;
        o.wire = WireFormat::kBFloat16;  // not applied under a hook
        std::vector<GradSpec> model = {
            {5, ncclFloat32}, {2000, ncclFloat32}, {0, ncclFloat32}, {31, ncclFloat32}};
        GradSync sync(comm, o);
        Buffers buffers(model);
        if (!registerModel(ctx, sync, model, &buffers)) return;
        const int nranks = ctx.nranks();
        std::atomic<int> calls{0};
        std::vector<std::vector<int>> seen;
        sync.setCommHook([&](ncclComm_t c, Bucket& b) {
          calls++;
          seen.push_back(b.gradients);
          if (b.dtype != ncclFloat32) return ncclInvalidArgument;
          ncclResult_t r = ncclAllReduce(b.data, b.data, b.count, b.dtype, ncclSum, c, nullptr);
          auto* f = static_cast<float*>(b.data);
          for (size_t i = 0; i < b.count; i++) f[i] /= static_cast<float>(nranks);
          return r;
        });
        for (int step = 0; step < 2; step++) {
          seen.clear();
          for (int g = 0; g < 4; g++)
            for (size_t i = 0; i < model[g].count; i++)
              storeValue(buffers.data(g), i, ncclFloat32,
                         inputValue(5, ctx.rank(), g, i, step, ncclFloat32));
          for (int g = 3; g >= 0; g--) sync.markReady(g);
          if (sync.finish() != ncclSuccess) return ctx.fail("finish: " + sync.lastError());
          std::vector<std::vector<int>> nonEmpty;
          for (const auto& bucket : sync.bucketLayout()) {
            size_t count = 0;
            for (int g : bucket) count += model[g].count;
            if (count) nonEmpty.push_back(bucket);
          }
          if (seen != nonEmpty) ctx.fail("the hook did not see each non-empty bucket once");
          if (sync.lastStep().wireBytes != 0) ctx.fail("wireBytes should be 0 under a hook");
          for (int g = 0; g < 4; g++)
            for (size_t i = 0; i < model[g].count; i++) {
              double sum = 0;
              for (int q = 0; q < nranks; q++) sum += inputValue(5, q, g, i, step, ncclFloat32);
              if (loadValue(buffers.data(g), i, ncclFloat32) !=
                  static_cast<double>(static_cast<float>(sum / nranks)))
                return ctx.fail("gradient " + std::to_string(g) + " element " + std::to_string(i) +
                                " is not the average");
            }
        }
        if (calls.load() == 0) ctx.fail("the hook never ran");
      }
      ncclCommDestroy(comm);
    });
    BRAID_EXPECT_ALL_RANKS_OK(report) << n << " ranks";
  }
}

// Rank 1's hook reduces the first of three buckets, then reports a failure (rank 0's hook
// succeeds): the later buckets still run on rank 1 (rank 0 waits for them), and both ranks'
// finish() fail promptly, rank 0's naming rank 1 and the hook. A hook that throws is an error,
// not a crash.
TEST(GradSyncHook, FailureOnOneRankFailsEveryRank) {
  for (bool throws : {false, true}) {
    auto report = test::runThreads(2, [&](RankContext& ctx) {
      ncclComm_t comm = ctx.initComm();
      if (!comm) return;
      {
        std::vector<GradSpec> model(3, GradSpec{10, ncclFloat32});
        GradSyncOptions o;
        o.firstBucketCapBytes = o.bucketCapBytes = 40;  // one gradient per bucket
        GradSync sync(comm, o);
        Buffers buffers(model);
        if (!registerModel(ctx, sync, model, &buffers)) return;
        const bool failHere = ctx.rank() == 1;
        sync.setCommHook([&](ncclComm_t c, Bucket& b) {
          ncclResult_t r = ncclAllReduce(b.data, b.data, b.count, b.dtype, ncclAvg, c, nullptr);
          if (!failHere || b.index != 0) return r;
          if (throws) throw std::runtime_error("hook exploded");
          return ncclInvalidUsage;
        });
        for (int g = 2; g >= 0; g--) sync.markReady(g);
        auto start = std::chrono::steady_clock::now();
        if (sync.finish() == ncclSuccess) return ctx.fail("finish succeeded");
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(10))
          ctx.fail("finish took more than 10 s");
        const std::string e = sync.lastError();
        if (!containsText(e, "rank 1") || !containsText(e, "comm hook"))
          ctx.fail("error does not name rank 1's hook: " + e);
        if (failHere && throws && !containsText(e, "hook exploded"))
          ctx.fail("the exception's text is lost: " + e);
        if (sync.markReady(0) == ncclSuccess) ctx.fail("the object stayed usable");
      }
      ncclCommDestroy(comm);
    });
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

std::vector<GradSpec> parameterModel() {
  return {
      {1031, ncclFloat32}, {7, ncclFloat64}, {13, ncclInt32}, {0, ncclFloat16}, {3, ncclBfloat16}};
}

double parameterValue(int rank, int p, size_t i) {
  if (p == 2) return 100.0 * rank + static_cast<double>(i);  // the int32 parameter
  return inputValue(11, rank, p, i, 0, ncclFloat16);
}

TEST(GradSyncParameters, BroadcastFromAnyRoot) {
  for (int n : {1, 2, 3, 5}) {
    auto report = test::runThreads(n, [](RankContext& ctx) {
      ncclComm_t comm = ctx.initComm();
      if (!comm) return;
      {
        const auto model = parameterModel();
        Buffers params(model);
        std::vector<TensorRef> refs;
        for (size_t p = 0; p < model.size(); p++) {
          refs.push_back({params.data(static_cast<int>(p)), model[p].count, model[p].dtype});
          for (size_t i = 0; i < model[p].count; i++)
            storeValue(params.data(static_cast<int>(p)), i, model[p].dtype,
                       parameterValue(ctx.rank(), static_cast<int>(p), i));
        }
        GradSync sync(comm);
        const int root = ctx.nranks() - 1;
        if (sync.broadcastParameters(refs, root) != ncclSuccess)
          return ctx.fail("broadcastParameters: " + sync.lastError());
        for (size_t p = 0; p < model.size(); p++)
          for (size_t i = 0; i < model[p].count; i++)
            if (loadValue(params.data(static_cast<int>(p)), i, model[p].dtype) !=
                parameterValue(root, static_cast<int>(p), i))
              return ctx.fail("parameter " + std::to_string(p) + " element " + std::to_string(i) +
                              " is not the root's");
        if (sync.verifyParametersEqual(refs) != ncclSuccess)
          ctx.fail("verify after broadcast: " + sync.lastError());
      }
      ncclCommDestroy(comm);
    });
    BRAID_EXPECT_ALL_RANKS_OK(report) << n << " ranks";
  }
}

// Ranks 1 and 2 differ from rank 0 in parameter 1 (element 5 and 2), rank 2 also in parameter
// 3: every rank's error names parameter 1, both ranks, the elements and the values.
TEST(GradSyncParameters, VerifyNamesParameterRanksAndValues) {
  auto report = test::runThreads(4, [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    {
      std::vector<GradSpec> model = {
          {100, ncclFloat32}, {7, ncclFloat64}, {9, ncclFloat32}, {4, ncclBfloat16}};
      Buffers params(model);
      std::vector<TensorRef> refs;
      for (size_t p = 0; p < model.size(); p++)
        refs.push_back({params.data(static_cast<int>(p)), model[p].count, model[p].dtype});
      std::vector<std::string> names = {"w0", "w1", "w2", "w3"};
      GradSync sync(comm);
      if (sync.verifyParametersEqual(refs, names) != ncclSuccess)
        return ctx.fail("equal (zero) parameters reported different: " + sync.lastError());
      if (ctx.rank() == 1) storeValue(params.data(1), 5, ncclFloat64, 0.5);
      if (ctx.rank() == 2) {
        storeValue(params.data(1), 2, ncclFloat64, -0.25);
        storeValue(params.data(3), 0, ncclBfloat16, 1);
      }
      if (sync.verifyParametersEqual(refs, names) != ncclInvalidUsage)
        return ctx.fail("different parameters not reported");
      const std::string e = sync.lastError();
      for (const char* part : {"parameter 1 ('w1')", "rank(s) 1, 2", "rank 1 element 5 = 0.5",
                               "rank 2 element 2 = -0.25", "rank 0 has 0"})
        if (!containsText(e, part)) ctx.fail(std::string("error lacks '") + part + "': " + e);
      // A failed check leaves the object usable.
      if (sync.verifyParametersEqual({refs[0]}) != ncclSuccess)
        ctx.fail("verify of the equal parameter 0 failed: " + sync.lastError());
    }
    ncclCommDestroy(comm);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::gradsync_test
