// ncclCommShrink without failures: a live rank is excluded (first, middle, last, several, all but
// one), with NCCL_SHRINK_DEFAULT (the parent keeps working, excluded rank included) and with
// NCCL_SHRINK_ABORT (the parent is left revoked). The new communicator's size, ranks and
// allreduces (every element) prove its membership. Threads and processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness/rank_harness.h"
#include "shrink/shrink_test_util.h"

namespace braid::shrinktest {
namespace {

using test::RankContext;

struct LiveCase {
  int nranks;
  std::vector<int> excluded;  ///< as passed, unsorted on purpose where it has several
  int flags;
};

void PrintTo(const LiveCase& c, std::ostream* os) {
  *os << c.nranks << " ranks, exclude";
  for (int e : c.excluded) *os << " " << e;
  *os << (c.flags == NCCL_SHRINK_ABORT ? ", abort" : ", default");
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Every rank: a checked allreduce on the parent; survivors shrink and check the child; then the
// parent is either used once more by everyone (default) or refused (abort).
void shrinkLive(RankContext& ctx, const LiveCase& c) {
  ncclComm_t parent = ctx.initComm();
  if (!parent) return;
  const int me = ctx.rank();
  std::vector<int> all = survivorsOf(c.nranks, {});
  std::vector<int> survivors = survivorsOf(c.nranks, c.excluded);
  if (std::string e = allReduceChecked(parent, me, all, 0); !e.empty())
    return ctx.fail("parent before shrink: " + e);
  if (!contains(c.excluded, me)) {
    std::vector<int> list = c.excluded;
    ncclComm_t child = nullptr;
    ncclResult_t r = ncclCommShrink(parent, list.data(), static_cast<int>(list.size()), &child,
                                    nullptr, c.flags);
    if (r != ncclSuccess || !child)
      return ctx.fail(std::string("ncclCommShrink: ") + ncclGetLastError(parent));
    if (list != c.excluded) ctx.fail("ncclCommShrink changed the caller's excludeRanksList");
    int size = -1, rank = -1;
    ncclCommCount(child, &size);
    ncclCommUserRank(child, &rank);
    const int expectRank =
        static_cast<int>(std::find(survivors.begin(), survivors.end(), me) - survivors.begin());
    if (size != static_cast<int>(survivors.size()) || rank != expectRank)
      ctx.fail("child is rank " + std::to_string(rank) + " of " + std::to_string(size) +
               ", expected " + std::to_string(expectRank) + " of " +
               std::to_string(survivors.size()));
    if (std::string e = allReduceChecked(child, me, survivors, 1); !e.empty())
      ctx.fail("child: " + e);
    if (ncclCommDestroy(child) != ncclSuccess)
      ctx.fail(std::string("destroy child: ") + ncclGetLastError(child));
    if (c.flags == NCCL_SHRINK_ABORT) {
      int x = 1;
      if (ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, parent, nullptr) != ncclInvalidUsage ||
          std::string(ncclGetLastError(parent)).find("revoked") == std::string::npos)
        ctx.fail("NCCL_SHRINK_ABORT left the parent usable (or said nothing of revoke): " +
                 std::string(ncclGetLastError(parent)));
    }
  }
  if (c.flags == NCCL_SHRINK_DEFAULT) {
    if (std::string e = allReduceChecked(parent, me, all, 2); !e.empty())
      ctx.fail("parent after a default shrink: " + e);
  }
  if (ncclCommDestroy(parent) != ncclSuccess)
    ctx.fail(std::string("destroy parent: ") + ncclGetLastError(nullptr));
}

class ShrinkLiveRank : public ::testing::TestWithParam<LiveCase> {};

TEST_P(ShrinkLiveRank, Threads) {
  const LiveCase c = GetParam();
  auto report = test::runThreads(c.nranks, [&c](RankContext& ctx) { shrinkLive(ctx, c); });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ShrinkLiveRank,
    ::testing::Values(LiveCase{3, {1}, NCCL_SHRINK_DEFAULT}, LiveCase{3, {1}, NCCL_SHRINK_ABORT},
                      LiveCase{5, {0}, NCCL_SHRINK_DEFAULT}, LiveCase{5, {0}, NCCL_SHRINK_ABORT},
                      LiveCase{5, {4, 2}, NCCL_SHRINK_DEFAULT},
                      LiveCase{5, {4, 2}, NCCL_SHRINK_ABORT}, LiveCase{2, {1}, NCCL_SHRINK_DEFAULT},
                      LiveCase{2, {0}, NCCL_SHRINK_ABORT}),
    [](const ::testing::TestParamInfo<LiveCase>& info) {
      std::string name = std::to_string(info.param.nranks) + "ranks_exclude";
      for (int e : info.param.excluded) name += "_" + std::to_string(e);
      return name + (info.param.flags == NCCL_SHRINK_ABORT ? "_abort" : "_default");
    });

TEST(ShrinkLiveRank, Processes) {
  for (int flags : {NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT}) {
    LiveCase c{4, {0}, flags};
    auto report = test::runProcesses(4, [&c](RankContext& ctx) { shrinkLive(ctx, c); });
    BRAID_EXPECT_ALL_RANKS_OK(report) << "flags " << flags;
  }
}

// The same parent shrunk twice (the second offer must not be confused with the first), and a
// child shrunk again.
TEST(ShrinkRepeated, ParentTwiceAndChildAgain) {
  auto report = test::runThreads(4, [](RankContext& ctx) {
    ncclComm_t parent = ctx.initComm();
    if (!parent) return;
    const int me = ctx.rank();
    if (me != 3) {
      int drop3 = 3;
      ncclComm_t a = nullptr;
      if (ncclCommShrink(parent, &drop3, 1, &a, nullptr, NCCL_SHRINK_DEFAULT) != ncclSuccess)
        return ctx.fail(std::string("first shrink: ") + ncclGetLastError(parent));
      if (std::string e = allReduceChecked(a, me, {0, 1, 2}, 3); !e.empty())
        ctx.fail("first child: " + e);
      if (me != 2) {
        int drop23[] = {2, 3};
        ncclComm_t b = nullptr;
        if (ncclCommShrink(parent, drop23, 2, &b, nullptr, NCCL_SHRINK_DEFAULT) != ncclSuccess)
          return ctx.fail(std::string("second shrink: ") + ncclGetLastError(parent));
        if (std::string e = allReduceChecked(b, me, {0, 1}, 4); !e.empty())
          ctx.fail("second child: " + e);
        ncclCommDestroy(b);
      }
      if (me != 0) {
        int dropFirst = 0;  // the first child's rank 0 is the original rank 0
        ncclComm_t c = nullptr;
        if (ncclCommShrink(a, &dropFirst, 1, &c, nullptr, NCCL_SHRINK_ABORT) != ncclSuccess)
          return ctx.fail(std::string("shrink of the child: ") + ncclGetLastError(a));
        if (std::string e = allReduceChecked(c, me, {1, 2}, 5); !e.empty())
          ctx.fail("grandchild: " + e);
        ncclCommDestroy(c);
      }
      ncclCommDestroy(a);
    }
    ncclCommDestroy(parent);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::shrinktest
