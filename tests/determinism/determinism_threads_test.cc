// Determinism with ranks as threads: the same inputs, ranks and algorithm give bitwise the same
// float results on every repeat, on a fresh communicator, and (allreduce) on every rank; for
// the ring and the tree, at 3 and 4 ranks, with many chunks per call. The run also prints which
// settings change the reduction order (docs/determinism.md).
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <string>

#include "determinism/determinism_cases.h"

namespace braid::determinism {
namespace {

using Digests = std::vector<std::map<std::string, std::string>>;  // per rank: key -> digest

Digests runThreadRanks(int nranks, const std::string& algo, const char* slotBytes) {
  test::RunOptions options;
  options.env = {{"NCCL_ALGO", algo}, {"BRAID_SLOT_BYTES", slotBytes}};
  std::vector<Case> cases = standardCases(nranks);
  test::RunReport report = test::runThreads(
      nranks, [&](test::RankContext& ctx) { runCases(ctx, cases, 3); }, options);
  EXPECT_TRUE(report.ok()) << algo << ", " << nranks << " ranks: " << report.describe();
  Digests digests;
  for (const test::RankResult& r : report.ranks) digests.push_back(r.values);
  return digests;
}

void expectAllreduceAgreesOnEveryRank(const Digests& d, const std::string& what) {
  for (const auto& [key, digest] : d[0]) {
    if (key.rfind("allreduce/", 0) != 0) continue;
    for (std::size_t r = 1; r < d.size(); ++r)
      EXPECT_EQ(d[r].at(key), digest)
          << what << ": rank " << r << " differs from rank 0 on " << key;
  }
}

// How many of the cases' digests differ between two settings (same ranks and inputs).
int differingCases(const Digests& a, const Digests& b, const std::string& prefix) {
  int differing = 0;
  for (const auto& [key, digest] : a[0]) {
    if (key.rfind(prefix, 0) == 0 && key.find("/1/") == std::string::npos && b[0].at(key) != digest)
      ++differing;
  }
  return differing;
}

class DeterminismThreads : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(DeterminismThreads, SameBitsOnEveryRunAndRank) {
  auto [nranks, algo] = GetParam();
  Digests first = runThreadRanks(nranks, algo, kSlotBytes);
  Digests second = runThreadRanks(nranks, algo, kSlotBytes);  // fresh communicators
  ASSERT_EQ(first.size(), static_cast<std::size_t>(nranks));
  ASSERT_EQ(second.size(), first.size());
  for (int r = 0; r < nranks; ++r) {
    EXPECT_FALSE(first[r].empty());
    for (const auto& [key, digest] : first[r]) {
      EXPECT_EQ(second[r].at(key), digest) << "rank " << r << " " << key << " changed between runs";
    }
  }
  expectAllreduceAgreesOnEveryRank(first, algo);
}

INSTANTIATE_TEST_SUITE_P(RingAndTree, DeterminismThreads,
                         ::testing::Combine(::testing::Values(3, 4),
                                            ::testing::Values("allreduce:ring", "allreduce:tree")),
                         [](const auto& info) {
                           std::string algo = std::get<1>(info.param);
                           return std::to_string(std::get<0>(info.param)) + "ranks_" +
                                  algo.substr(algo.find(':') + 1);
                         });

// The ring and the tree add in different orders, so they must disagree somewhere on real
// inputs (or the "tree" is not a different algorithm); the slot size is printed for the record.
TEST(DeterminismThreadsOrder, RingAndTreeOrderDiffer) {
  Digests ring = runThreadRanks(4, "allreduce:ring", kSlotBytes);
  Digests tree = runThreadRanks(4, "allreduce:tree", kSlotBytes);
  Digests ringBigSlots = runThreadRanks(4, "allreduce:ring", "524288");
  Digests treeBigSlots = runThreadRanks(4, "allreduce:tree", "524288");
  ASSERT_FALSE(ring.empty());
  ASSERT_FALSE(tree.empty());
  int ringVsTree = differingCases(ring, tree, "allreduce/");
  std::cout << "allreduce cases (count > 1) whose bits differ, 4 ranks: ring vs tree " << ringVsTree
            << "; ring 16 KiB vs 512 KiB slots " << differingCases(ring, ringBigSlots, "allreduce/")
            << "; tree 16 KiB vs 512 KiB slots " << differingCases(tree, treeBigSlots, "allreduce/")
            << "; reduce-scatter 16 KiB vs 512 KiB slots "
            << differingCases(ring, ringBigSlots, "reducescatter/") << "; reduce "
            << differingCases(ring, ringBigSlots, "reduce/") << "\n";
  EXPECT_GT(ringVsTree, 0);
}

}  // namespace
}  // namespace braid::determinism
