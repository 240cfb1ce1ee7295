// Bad input: every misuse gets a clear error naming the gradient (and the ranks, for problems
// that involve several), never a hang or a silently wrong average. Ranks are threads; a short
// BRAID_TIMEOUT_S turns any wait that should not happen into a failure quickly.
#include <gtest/gtest.h>

#include <vector>

#include "gradsync/gradsync_test_util.h"

namespace braid::gradsync_test {
namespace {

using test::RankContext;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

test::RunOptions quick() {
  test::RunOptions o;
  o.timeoutS = 60;
  o.env = {{"BRAID_TIMEOUT_S", "20"}};
  return o;
}

// Runs `body` on n ranks with a communicator; the communicator is destroyed afterwards.
void onRanks(int n, const std::function<void(RankContext&, ncclComm_t)>& body) {
  auto report = test::runThreads(
      n,
      [&](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        body(ctx, comm);
        ncclCommDestroy(comm);
      },
      quick());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

void expectError(RankContext& ctx, ncclResult_t got, ncclResult_t expected, const GradSync& sync,
                 std::initializer_list<const char*> parts, const char* what) {
  if (got != expected)
    return ctx.fail(std::string(what) + ": returned " + ncclGetErrorString(got) + ", expected " +
                    ncclGetErrorString(expected) + " (" + sync.lastError() + ")");
  for (const char* part : parts)
    if (!contains(sync.lastError(), part))
      ctx.fail(std::string(what) + ": error lacks '" + part + "': " + sync.lastError());
}

TEST(GradSyncBadInput, OverlappingBuffers) {
  onRanks(1, [](RankContext& ctx, ncclComm_t comm) {
    std::vector<float> a(100);
    GradSync sync(comm);
    int i = -1;
    if (sync.addGradient({a.data(), 50, ncclFloat32}, "first", &i) != ncclSuccess)
      return ctx.fail(sync.lastError());
    expectError(ctx, sync.addGradient({a.data() + 40, 20, ncclFloat32}, "second", &i),
                ncclInvalidArgument, sync, {"'second'", "overlaps gradient 0 ('first')"},
                "partial overlap");
    if (i != -1) ctx.fail("a refused gradient got an index");
    expectError(ctx, sync.addGradient({a.data(), 50, ncclFloat32}, "again", &i),
                ncclInvalidArgument, sync, {"overlaps gradient 0"}, "same buffer");
    if (sync.addGradient({a.data() + 50, 50, ncclFloat32}, "adjacent", &i) != ncclSuccess)
      ctx.fail("adjacent buffers refused: " + sync.lastError());
    // New buffers below a registered one: running into it, or enclosing it, overlaps.
    std::vector<float> c(100);
    if (sync.addGradient({c.data() + 50, 10, ncclFloat32}, "middle", &i) != ncclSuccess)
      return ctx.fail(sync.lastError());
    expectError(ctx, sync.addGradient({c.data() + 40, 15, ncclFloat32}, "below", &i),
                ncclInvalidArgument, sync, {"overlaps gradient 2 ('middle')"}, "running into");
    expectError(ctx, sync.addGradient({c.data(), 100, ncclFloat32}, "all", &i), ncclInvalidArgument,
                sync, {"overlaps gradient"}, "enclosing");
    if (sync.addGradient({c.data() + 40, 10, ncclFloat32}, "just below", &i) != ncclSuccess)
      ctx.fail("a buffer ending where another starts refused: " + sync.lastError());
    // The model lost a gradient: finalize refuses it.
    expectError(ctx, sync.finalize(), ncclInvalidArgument, sync, {"rank 0", "overlaps"},
                "finalize after a refused gradient");
  });
}

TEST(GradSyncBadInput, RefusedGradientOnOneRankFailsFinalizeEverywhere) {
  onRanks(3, [](RankContext& ctx, ncclComm_t comm) {
    std::vector<float> a(10);
    std::vector<int32_t> b(10);
    GradSync sync(comm);
    int i;
    sync.addGradient({a.data(), 10, ncclFloat32}, "w", &i);
    if (ctx.rank() == 2) {
      expectError(ctx, sync.addGradient({b.data(), 10, ncclInt32}, "counter", &i),
                  ncclInvalidArgument, sync, {"'counter'", "int32", "not a gradient type"},
                  "int32 gradient");
    } else {
      sync.addGradient({b.data(), 10, ncclFloat32}, "counter", &i);
    }
    ncclResult_t r = sync.finalize();
    if (ctx.rank() == 2)
      expectError(ctx, r, ncclInvalidArgument, sync, {"this rank", "int32"}, "finalize");
    else
      expectError(ctx, r, ncclRemoteError, sync, {"rank 2", "gradient 1"}, "finalize");
  });
}

TEST(GradSyncBadInput, NullDataOnlyWithViews) {
  onRanks(1, [](RankContext& ctx, ncclComm_t comm) {
    GradSync copies(comm);
    int i;
    expectError(ctx, copies.addGradient({nullptr, 5, ncclFloat32}, "w", &i), ncclInvalidArgument,
                copies, {"'w'", "NULL"}, "NULL data");
    expectError(ctx, copies.addGradient({nullptr, 5, ncclFloat32}, "w", nullptr),
                ncclInvalidArgument, copies, {"index"}, "NULL index");
    GradSyncOptions o;
    o.gradientsAsBucketViews = true;
    GradSync views(comm, o);
    if (views.addGradient({nullptr, 5, ncclFloat32}, "w", &i) != ncclSuccess ||
        views.addGradient({nullptr, 0, ncclFloat64}, "empty", &i) != ncclSuccess ||
        views.finalize() != ncclSuccess)
      return ctx.fail("views with NULL data refused: " + views.lastError());
    if (!views.gradientData(0) || views.gradientData(2) || views.gradientData(-1))
      ctx.fail("gradientData: a view missing or an index out of range answered");
  });
}

TEST(GradSyncBadInput, CallsInTheWrongPhase) {
  onRanks(2, [](RankContext& ctx, ncclComm_t comm) {
    std::vector<float> a(4);
    GradSync sync(comm);
    int i;
    expectError(ctx, sync.markReady(0), ncclInvalidUsage, sync, {"before finalize"},
                "markReady first");
    expectError(ctx, sync.finish(), ncclInvalidUsage, sync, {"before finalize"}, "finish first");
    sync.addGradient({a.data(), 4, ncclFloat32}, "w", &i);
    if (sync.finalize() != ncclSuccess) return ctx.fail(sync.lastError());
    expectError(ctx, sync.finalize(), ncclInvalidUsage, sync, {"twice"}, "finalize twice");
    std::vector<float> late(4);
    expectError(ctx, sync.addGradient({late.data(), 4, ncclFloat32}, "late", &i), ncclInvalidUsage,
                sync, {"'late'", "after finalize"}, "addGradient late");
    // Out of range: refused, nothing changes, the step still works.
    expectError(ctx, sync.markReady(-1), ncclInvalidArgument, sync, {"-1", "out of range", "1 "},
                "markReady(-1)");
    expectError(ctx, sync.markReady(1), ncclInvalidArgument, sync, {"index 1", "out of range"},
                "markReady(1)");
    sync.markReady(0);
    expectError(ctx, sync.broadcastParameters({{a.data(), 4, ncclFloat32}}), ncclInvalidUsage, sync,
                {"between markReady"}, "broadcast during a step");
    if (sync.finish() != ncclSuccess) ctx.fail("the step after refused calls: " + sync.lastError());
  });
}

// Rank 0 marks gradient 1 twice: markReady says so at once, and finish() fails on both ranks
// (rank 1's error names rank 0 and the gradient), in copy and view modes.
TEST(GradSyncBadInput, MarkedTwice) {
  for (bool views : {false, true}) {
    onRanks(2, [&](RankContext& ctx, ncclComm_t comm) {
      GradSyncOptions o;
      o.gradientsAsBucketViews = views;
      o.firstBucketCapBytes = o.bucketCapBytes = 16;
      std::vector<GradSpec> model = {{4, ncclFloat32}, {4, ncclFloat32}, {4, ncclFloat32}};
      Buffers buffers(model);
      GradSync sync(comm, o);
      if (!registerModel(ctx, sync, model, views ? nullptr : &buffers)) return;
      sync.markReady(2);
      sync.markReady(1);
      if (ctx.rank() == 0)
        expectError(ctx, sync.markReady(1), ncclInvalidUsage, sync, {"gradient 1 ('g1')", "twice"},
                    "second markReady");
      sync.markReady(0);
      ncclResult_t r = sync.finish();
      if (ctx.rank() == 0)
        expectError(ctx, r, ncclInvalidUsage, sync, {"step 1", "this rank", "'g1'"}, "finish");
      else
        expectError(ctx, r, ncclRemoteError, sync, {"rank 0", "gradient 1 ('g1')", "twice"},
                    "finish");
      if (sync.finish() == ncclSuccess || sync.markReady(0) == ncclSuccess)
        ctx.fail("the object stayed usable after the failed step");
    });
  }
}

// Rank 2 never marks gradients 0 and 3: all three ranks' finish() fail promptly, naming them.
TEST(GradSyncBadInput, NeverMarked) {
  for (bool views : {false, true}) {
    onRanks(3, [&](RankContext& ctx, ncclComm_t comm) {
      GradSyncOptions o;
      o.gradientsAsBucketViews = views;
      o.firstBucketCapBytes = o.bucketCapBytes = 32;
      std::vector<GradSpec> model(5, GradSpec{8, ncclFloat32});
      Buffers buffers(model);
      GradSync sync(comm, o);
      if (!registerModel(ctx, sync, model, views ? nullptr : &buffers)) return;
      for (int g = 4; g >= 0; g--)
        if (ctx.rank() != 2 || (g != 0 && g != 3)) sync.markReady(g);
      ncclResult_t r = sync.finish();
      if (ctx.rank() == 2)
        expectError(ctx, r, ncclInvalidUsage, sync, {"never marked", "0 ('g0'), 3 ('g3')"},
                    "finish");
      else
        expectError(ctx, r, ncclRemoteError, sync,
                    {"rank 2", "gradient 0 ('g0') was never marked", "2 unmarked"}, "finish");
    });
  }
}

// A gradient left unmarked in a no-sync step is reported at once, and the next synced step
// fails on every rank (the others are not left waiting for this rank's buckets).
TEST(GradSyncBadInput, NeverMarkedInANoSyncStep) {
  onRanks(2, [](RankContext& ctx, ncclComm_t comm) {
    std::vector<GradSpec> model(2, GradSpec{8, ncclFloat32});
    Buffers buffers(model);
    GradSync sync(comm);
    if (!registerModel(ctx, sync, model, &buffers)) return;
    {
      GradSync::NoSync scope(sync);
      sync.markReady(1);
      if (ctx.rank() == 1) {
        expectError(ctx, sync.finish(), ncclInvalidUsage, sync, {"0 ('g0')"}, "no-sync finish");
      } else {
        sync.markReady(0);
        if (sync.finish() != ncclSuccess) ctx.fail("no-sync finish: " + sync.lastError());
      }
    }
    sync.markReady(1);
    sync.markReady(0);
    ncclResult_t r = sync.finish();
    if (ctx.rank() == 0)
      expectError(ctx, r, ncclRemoteError, sync, {"rank 1", "'g0'", "never marked"},
                  "synced finish");
    else if (r == ncclSuccess)
      ctx.fail("the synced step after the fault succeeded");
  });
}

TEST(GradSyncBadInput, MismatchedModels) {
  struct Case {
    const char* what;
    std::function<std::vector<GradSpec>(int rank)> model;
    std::vector<const char*> parts;
  };
  const std::vector<Case> cases = {
      {"gradient count",
       [](int rank) {
         return std::vector<GradSpec>(rank == 1 ? 4 : 3, GradSpec{6, ncclFloat32});
       },
       {"rank 0 has 3 gradients", "rank 1 has 4"}},
      {"element count",
       [](int rank) {
         return std::vector<GradSpec>{{6, ncclFloat32}, {rank == 2 ? 12u : 10u, ncclFloat32}};
       },
       {"gradient 1 ('g1')", "rank 0 has 10 x float32", "rank 2 has 12 x float32"}},
      {"dtype",
       [](int rank) {
         return std::vector<GradSpec>{{6, rank == 1 ? ncclFloat64 : ncclFloat32}};
       },
       {"gradient 0 ('g0')", "rank 0 has 6 x float32", "rank 1 has 6 x float64"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    onRanks(3, [&](RankContext& ctx, ncclComm_t comm) {
      auto model = c.model(ctx.rank());
      Buffers buffers(model);
      GradSync sync(comm);
      int i;
      for (size_t g = 0; g < model.size(); g++)
        sync.addGradient({buffers.data(static_cast<int>(g)), model[g].count, model[g].dtype},
                         "g" + std::to_string(g), &i);
      ncclResult_t r = sync.finalize();
      if (r != ncclInvalidUsage)
        return ctx.fail(std::string("finalize returned ") + ncclGetErrorString(r));
      for (const char* part : c.parts)
        if (!contains(sync.lastError(), part))
          ctx.fail(std::string("error lacks '") + part + "': " + sync.lastError());
    });
  }
}

TEST(GradSyncBadInput, OptionsDifferAcrossRanks) {
  onRanks(2, [](RankContext& ctx, ncclComm_t comm) {
    GradSyncOptions o;
    if (ctx.rank() == 1) o.bucketCapBytes = 1 << 20;
    std::vector<float> a(3);
    GradSync sync(comm, o);
    int i;
    sync.addGradient({a.data(), 3, ncclFloat32}, "w", &i);
    expectError(ctx, sync.finalize(), ncclInvalidUsage, sync,
                {"bucketCapBytes", "26214400 on rank 0", "1048576 on rank 1"}, "finalize");
  });
}

TEST(GradSyncBadInput, ParameterCallsAgreeBeforeMovingData) {
  onRanks(2, [](RankContext& ctx, ncclComm_t comm) {
    std::vector<float> a(8), b(8);
    GradSync sync(comm);
    expectError(ctx, sync.broadcastParameters({{a.data(), 8, ncclFloat32}}, 7), ncclInvalidArgument,
                sync, {"root=7"}, "root out of range");
    std::vector<TensorRef> refs = {{a.data(), 8, ncclFloat32}};
    if (ctx.rank() == 1) refs.push_back({b.data(), 8, ncclFloat32});
    expectError(ctx, sync.broadcastParameters(refs), ncclInvalidUsage, sync,
                {"rank 0 passes 1 parameters", "rank 1 passes 2"}, "different lists");
    std::vector<TensorRef> bad = {{ctx.rank() == 0 ? nullptr : a.data(), 8, ncclFloat32}};
    ncclResult_t r = sync.verifyParametersEqual(bad);
    if (ctx.rank() == 0)
      expectError(ctx, r, ncclInvalidArgument, sync, {"parameter 0", "NULL"}, "NULL parameter");
    else
      expectError(ctx, r, ncclInvalidArgument, sync, {"rank 0 refused its parameter 0"},
                  "peer's NULL parameter");
    if (sync.broadcastParameters({{a.data(), 8, ncclFloat32}}) != ncclSuccess)
      ctx.fail("refused parameter calls left the object unusable: " + sync.lastError());
  });
}

TEST(GradSyncBadInput, NullCommunicator) {
  GradSync sync(nullptr);
  std::vector<float> a(3);
  int i;
  EXPECT_EQ(sync.addGradient({a.data(), 3, ncclFloat32}, "w", &i), ncclInvalidArgument);
  EXPECT_NE(sync.lastError().find("comm"), std::string::npos) << sync.lastError();
  EXPECT_EQ(sync.finalize(), ncclInvalidArgument);
}

}  // namespace
}  // namespace braid::gradsync_test
