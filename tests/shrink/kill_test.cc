// A rank is killed (SIGKILL) in the middle of a stream of large allreduces: rank 0 (which hosts
// the bootstrap root under NCCL_COMM_ID), a middle rank, or the last. Every survivor gets an
// error from the allreduce it is in, shrinks (NCCL_SHRINK_ABORT; once NCCL_SHRINK_DEFAULT, as a
// single-threaded program has nothing outstanding once the call returned), and the survivors
// complete allreduces whose every element is checked. Shared memory, TCP on one host, and TCP
// between network namespaces.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"
#include "shrink/shrink_test_util.h"

namespace braid::shrinktest {
namespace {

using test::Outcome;
using test::RankContext;

constexpr int kRanks = 4;
constexpr const char* kTimeoutS = "1";  // survivors waiting on a live peer end at this deadline

struct Kill {
  int victim;
  const char* transport;
  int flags = NCCL_SHRINK_ABORT;
};

void PrintTo(const Kill& k, std::ostream* os) {
  *os << "victim " << k.victim << " over " << k.transport
      << (k.flags == NCCL_SHRINK_ABORT ? ", abort" : ", default");
}

void killAndShrink(RankContext& ctx, int victim, int flags) {
  ncclComm_t comm = ctx.initComm();
  const int me = ctx.rank();
  if (!comm) {
    if (me == victim) kill(getpid(), SIGKILL);
    return;
  }
  const std::vector<int> all = survivorsOf(kRanks, {});
  if (std::string e = allReduceChecked(comm, me, all, 0); !e.empty())
    ctx.fail("before the kill: " + e);
  const size_t count = 1 << 20;
  std::vector<float> buf(count, 1.0f);
  if (me == victim) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      kill(getpid(), SIGKILL);
    }).detach();
    for (;;) ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr);
  }
  ncclResult_t r = ncclSuccess;
  const double limit = now() + 60;
  double callStart = now();
  while (r == ncclSuccess && now() < limit) {
    callStart = now();
    r = ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr);
  }
  if (r == ncclSuccess) return ctx.fail("no allreduce failed for 60 s after the kill");
  ctx.report("error", ncclGetLastError(comm));
  ctx.report("failed_call_s", std::to_string(now() - callStart));
  const double shrinkStart = now();
  ncclComm_t child = nullptr;
  int excluded = victim;
  if (ncclCommShrink(comm, &excluded, 1, &child, nullptr, flags) != ncclSuccess)
    return ctx.fail(std::string("shrink: ") + ncclGetLastError(comm));
  ctx.report("shrink_s", std::to_string(now() - shrinkStart));
  const std::vector<int> survivors = survivorsOf(kRanks, {victim});
  int size = -1, rank = -1;
  ncclCommCount(child, &size);
  ncclCommUserRank(child, &rank);
  const int expectRank = me < victim ? me : me - 1;
  if (size != kRanks - 1 || rank != expectRank)
    ctx.fail("child is rank " + std::to_string(rank) + " of " + std::to_string(size));
  if (std::string e = allReduceChecked(child, me, survivors, 1); !e.empty())
    ctx.fail("after the shrink: " + e);
  if (ncclCommDestroy(child) != ncclSuccess)
    ctx.fail(std::string("destroy child: ") + ncclGetLastError(nullptr));
  if (ncclCommDestroy(comm) != ncclSuccess)
    ctx.fail(std::string("destroy parent: ") + ncclGetLastError(nullptr));
}

// The victim died by SIGKILL; every survivor shrank and checked its allreduces. Prints each
// survivor's time to error and time to shrink.
void expectSurvivorsShrank(const test::RunReport& report, int victim) {
  ASSERT_TRUE(report.setupError.empty()) << report.describe();
  for (const test::RankResult& r : report.ranks) {
    if (r.rank == victim) {
      EXPECT_EQ(r.outcome, Outcome::kSignaled) << report.describe();
      EXPECT_EQ(r.signal, SIGKILL) << report.describe();
      continue;
    }
    EXPECT_EQ(r.outcome, Outcome::kOk) << report.describe();
    ASSERT_NE(r.values.count("shrink_s"), 0u) << report.describe();
    std::cout << "rank " << r.rank << ": allreduce failed after " << r.values.at("failed_call_s")
              << " s, shrink took " << r.values.at("shrink_s") << " s" << std::endl;
  }
}

class KillAndShrink : public ::testing::TestWithParam<Kill> {};

TEST_P(KillAndShrink, SurvivorsContinue) {
  const Kill k = GetParam();
  test::RunOptions options;
  options.idFromEnvironment = true;  // rank 0 hosts the root: killing it kills the root too
  options.env = {{"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(test::freeLocalPort())},
                 {"NCCL_SOCKET_IFNAME", "lo"},
                 {"BRAID_TIMEOUT_S", kTimeoutS},
                 {"BRAID_TRANSPORTS", k.transport},
                 {"NCCL_ALGO", "Ring"}};
  options.timeoutS = 90;
  auto report = test::runProcesses(
      kRanks, [&k](RankContext& ctx) { killAndShrink(ctx, k.victim, k.flags); }, options);
  expectSurvivorsShrank(report, k.victim);
}

// Rank 0 (hosting the root) killed while ranks talk TCP between two network namespaces (ranks
// 0 and 2 on one "host", 1 and 3 on the other: shared memory inside, TCP between). Label netns.
TEST(KillAndShrinkAcrossNamespaces, RankZero) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  test::NamespaceOptions options;
  options.namespaces = 2;
  options.env = {{"BRAID_TIMEOUT_S", kTimeoutS}, {"NCCL_ALGO", "Ring"}};
  options.timeoutS = 90;
  auto report = test::runInNamespaces(
      kRanks, [](RankContext& ctx) { killAndShrink(ctx, 0, NCCL_SHRINK_ABORT); }, options);
  if (test::isNamespaceChild()) return;
  expectSurvivorsShrank(report, 0);
}

INSTANTIATE_TEST_SUITE_P(Victims, KillAndShrink,
                         ::testing::Values(Kill{0, "shm"}, Kill{1, "shm"}, Kill{3, "shm"},
                                           Kill{0, "tcp"}, Kill{2, "shm", NCCL_SHRINK_DEFAULT}),
                         [](const ::testing::TestParamInfo<Kill>& info) {
                           return "rank" + std::to_string(info.param.victim) + "_" +
                                  info.param.transport +
                                  (info.param.flags == NCCL_SHRINK_ABORT ? "" : "_default");
                         });

}  // namespace
}  // namespace braid::shrinktest
