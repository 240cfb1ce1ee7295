// Determinism with ranks as processes (shared memory): the same bits on every repeat and rank,
// the same bits as the same ranks as threads (the transport does not change the order), and
// the same bits with the scalar kernels as with the vector ones (BRAID_KERNEL_ISA=scalar: an
// element-wise sum is computed element by element in either, so vectors do not reorder it).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "determinism/determinism_cases.h"

namespace braid::determinism {
namespace {

using Digests = std::vector<std::map<std::string, std::string>>;

Digests run(bool processes, int nranks, std::vector<std::pair<std::string, std::string>> env) {
  test::RunOptions options;
  options.env = std::move(env);
  options.env.push_back({"BRAID_SLOT_BYTES", kSlotBytes});
  std::vector<Case> cases = standardCases(nranks);
  auto body = [&](test::RankContext& ctx) { runCases(ctx, cases, 3); };
  test::RunReport report = processes ? test::runProcesses(nranks, body, options)
                                     : test::runThreads(nranks, body, options);
  EXPECT_TRUE(report.ok()) << report.describe();
  Digests digests;
  for (const test::RankResult& r : report.ranks) digests.push_back(r.values);
  return digests;
}

void expectSameDigests(const Digests& a, const Digests& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t r = 0; r < a.size(); ++r) {
    for (const auto& [key, digest] : a[r]) {
      if (key == "isa") continue;
      ASSERT_TRUE(b[r].count(key)) << what << ": rank " << r << " has no " << key;
      EXPECT_EQ(b[r].at(key), digest) << what << ": rank " << r << " " << key;
    }
  }
}

TEST(DeterminismProcesses, SameBitsOnEveryRunRankAndAsThreads) {
  for (const char* algo : {"allreduce:ring", "allreduce:tree"}) {
    Digests first = run(true, 3, {{"NCCL_ALGO", algo}});
    Digests second = run(true, 3, {{"NCCL_ALGO", algo}});
    ASSERT_EQ(first.size(), 3u);
    expectSameDigests(first, second, std::string(algo) + ", processes, two runs");
    for (const auto& [key, digest] : first[0]) {
      if (key.rfind("allreduce/", 0) != 0) continue;
      EXPECT_EQ(first[1].at(key), digest) << algo << " rank 1 " << key;
      EXPECT_EQ(first[2].at(key), digest) << algo << " rank 2 " << key;
    }
    Digests threads = run(false, 3, {{"NCCL_ALGO", algo}});
    expectSameDigests(first, threads, std::string(algo) + ", processes vs threads");
  }
}

// Each rank process picks its kernels on its first reduction, from its own environment; this
// test's process must not have reduced before (ctest runs each test in its own process).
TEST(DeterminismProcesses, ScalarKernelsGiveTheSameBits) {
  Digests vector = run(true, 3, {{"NCCL_ALGO", "allreduce:ring"}});
  Digests scalar = run(true, 3, {{"NCCL_ALGO", "allreduce:ring"}, {"BRAID_KERNEL_ISA", "scalar"}});
  ASSERT_EQ(vector.size(), 3u);
  ASSERT_EQ(scalar.size(), 3u);
  if (scalar[0].at("isa") != "scalar")
    GTEST_SKIP() << "the kernels were chosen before the ranks forked (run this test alone)";
  if (vector[0].at("isa") == "scalar") GTEST_SKIP() << "this CPU has no vector kernels";
  expectSameDigests(vector, scalar, std::string("scalar vs ") + vector[0].at("isa"));
}

}  // namespace
}  // namespace braid::determinism
