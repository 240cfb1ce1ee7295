// fp16/bf16 wire formats: fp32 gradients with full mantissas are narrowed, averaged and widened
// back. The documented bound (docs/gradsync.md) is checked element by element against the
// float64 average and against the same step with the fp32 wire: |wire - exact| <=
// (N + 2) * u * mean_r |g_r| + (N + 2) * 2^-24, u = 2^-11 (fp16) or 2^-8 (bf16). Other dtypes in
// the model stay on their own wire, exactly as without compression.
#include <gtest/gtest.h>

#include <cmath>

#include "gradsync/gradsync_test_util.h"

namespace braid::gradsync_test {
namespace {

using test::RankContext;

const std::vector<GradSpec> kModel = {
    {1, ncclFloat32}, {4099, ncclFloat32}, {7, ncclFloat64}, {257, ncclFloat32}, {0, ncclFloat32}};

// Runs one synced step with `options` and returns every gradient's result as doubles.
bool runStep(RankContext& ctx, ncclComm_t comm, const GradSyncOptions& options,
             std::vector<std::vector<double>>* results, StepStats* stats) {
  GradSync sync(comm, options);
  Buffers buffers(kModel);
  if (!registerModel(ctx, sync, kModel, &buffers)) return false;
  for (size_t g = 0; g < kModel.size(); g++)
    for (size_t i = 0; i < kModel[g].count; i++)
      storeValue(buffers.data(static_cast<int>(g)), i, kModel[g].dtype,
                 roughValue(3, ctx.rank(), static_cast<int>(g), i, 0));
  for (int g = static_cast<int>(kModel.size()) - 1; g >= 0; g--) sync.markReady(g);
  if (sync.finish() != ncclSuccess) {
    ctx.fail("finish: " + sync.lastError());
    return false;
  }
  *stats = sync.lastStep();
  results->assign(kModel.size(), {});
  for (size_t g = 0; g < kModel.size(); g++)
    for (size_t i = 0; i < kModel[g].count; i++)
      (*results)[g].push_back(loadValue(buffers.data(static_cast<int>(g)), i, kModel[g].dtype));
  return true;
}

void checkWire(RankContext& ctx, WireFormat wire, Averaging averaging) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks();
  GradSyncOptions native;
  native.averaging = averaging;
  native.firstBucketCapBytes = 1024;
  native.bucketCapBytes = 8192;
  GradSyncOptions compressed = native;
  compressed.wire = wire;
  std::vector<std::vector<double>> fp32Result, wireResult;
  StepStats fp32Stats, wireStats;
  if (runStep(ctx, comm, native, &fp32Result, &fp32Stats) &&
      runStep(ctx, comm, compressed, &wireResult, &wireStats)) {
    const double u = std::ldexp(1.0, wire == WireFormat::kFloat16 ? -11 : -8);
    size_t differing = 0, fp32Bytes = 0, otherBytes = 0;
    for (size_t g = 0; g < kModel.size(); g++) {
      (kModel[g].dtype == ncclFloat32 ? fp32Bytes : otherBytes) +=
          kModel[g].count * dtypeBytes(kModel[g].dtype);
      for (size_t i = 0; i < kModel[g].count; i++) {
        double exact = 0, magnitude = 0;
        for (int q = 0; q < n; q++) {
          double v = roughValue(3, q, static_cast<int>(g), i, 0);
          if (kModel[g].dtype == ncclFloat32) v = static_cast<float>(v);
          exact += v;
          magnitude += std::fabs(v);
        }
        exact /= n;
        magnitude /= n;
        const double got = wireResult[g][i];
        if (kModel[g].dtype != ncclFloat32) {
          if (got != fp32Result[g][i])
            return ctx.fail("the " + std::to_string(g) +
                            " gradient (not fp32) changed with the "
                            "wire format");
          continue;
        }
        const double bound = (n + 2) * (u * magnitude + std::ldexp(1.0, -24));
        if (!(std::fabs(got - exact) <= bound))
          return ctx.fail("gradient " + std::to_string(g) + " element " + std::to_string(i) + ": " +
                          std::to_string(got) + " vs exact " + std::to_string(exact) + " beyond " +
                          std::to_string(bound));
        if (!(std::fabs(got - fp32Result[g][i]) <= bound + (n + 2) * 6e-8 * magnitude))
          return ctx.fail("gradient " + std::to_string(g) + " element " + std::to_string(i) +
                          " too far from the fp32 wire's result");
        differing += got != fp32Result[g][i];
      }
    }
    // The wire really was narrower: the results differ somewhere, and half the fp32 bytes moved.
    if (differing == 0) ctx.fail("no element differs from the fp32 result: was the wire used?");
    if (wireStats.wireBytes != fp32Bytes / 2 + otherBytes ||
        wireStats.bytesReduced != fp32Stats.bytesReduced ||
        fp32Stats.wireBytes != fp32Bytes + otherBytes)
      ctx.fail("wireBytes " + std::to_string(wireStats.wireBytes) + ", expected " +
               std::to_string(fp32Bytes / 2 + otherBytes));
  }
  ncclCommDestroy(comm);
}

TEST(GradSyncWire, HalfPrecisionWithinTheDocumentedBound) {
  for (WireFormat wire : {WireFormat::kFloat16, WireFormat::kBFloat16}) {
    for (Averaging averaging : {Averaging::kAvgOp, Averaging::kPreMulSum}) {
      for (int n : {1, 2, 3, 5}) {
        auto report =
            test::runThreads(n, [&](RankContext& ctx) { checkWire(ctx, wire, averaging); });
        BRAID_EXPECT_ALL_RANKS_OK(report)
            << (wire == WireFormat::kFloat16 ? "fp16" : "bf16") << " wire, "
            << (averaging == Averaging::kAvgOp ? "ncclAvg" : "premulsum") << ", " << n << " ranks";
      }
    }
  }
}

// Exact inputs through the wire, with views, accumulation and the rebuild (the scenario runner
// checks with the wire type's rounding).
TEST(GradSyncWire, ViewsAndAccumulation) {
  for (WireFormat wire : {WireFormat::kFloat16, WireFormat::kBFloat16}) {
    Scenario s;
    s.model = oddModel();
    s.options.firstBucketCapBytes = 64;
    s.options.bucketCapBytes = 4096;
    s.options.gradientsAsBucketViews = true;
    s.options.wire = wire;
    s.syncPattern = {false, true, true};
    auto report = test::runThreads(3, [&](RankContext& ctx) { runScenario(ctx, s); });
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

}  // namespace
}  // namespace braid::gradsync_test
