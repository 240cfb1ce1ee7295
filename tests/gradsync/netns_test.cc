// GradSync between "hosts": ranks in separate network namespaces talk TCP (label netns; skipped
// with the reason where namespaces cannot be made). Views, the bf16 wire and accumulation, with
// rank 0 on one host and its ring neighbours on others.
#include <gtest/gtest.h>

#include "gradsync/gradsync_test_util.h"

namespace braid::gradsync_test {
namespace {

TEST(GradSyncNamespaces, AveragesOverTcp) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  Scenario s;
  s.model = oddModel();
  s.options.firstBucketCapBytes = 64;
  s.options.bucketCapBytes = 4096;
  s.options.gradientsAsBucketViews = true;
  s.options.wire = WireFormat::kBFloat16;
  s.syncPattern = {true, false, true};
  test::NamespaceOptions o;
  o.namespaces = 3;
  o.timeoutS = 90;
  o.env = {{"BRAID_TIMEOUT_S", "30"}};
  auto report = test::runInNamespaces(
      3, [&](test::RankContext& ctx) { runScenario(ctx, s); }, o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::gradsync_test
