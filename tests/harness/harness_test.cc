// The rank harness must report exactly what each rank did, or the tests built on it prove
// nothing: success, recorded failures, assertion failures in child processes, exceptions, exit
// codes, signals, and stragglers killed at the deadline.
#include <gtest/gtest.h>
#include <unistd.h>

#include <sys/wait.h>
#include <chrono>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "harness/rank_harness.h"

namespace braid::test {
namespace {

// A real communicator on every rank: rank r contributes r + 1, everyone must see the sum.
void sumOfRanks(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  int in = ctx.rank() + 1, out = -1;
  ncclResult_t r = ncclAllReduce(&in, &out, 1, ncclInt32, ncclSum, comm, nullptr);
  if (r != ncclSuccess) ctx.fail(std::string("ncclAllReduce: ") + ncclGetLastError(comm));
  int n = ctx.nranks();
  if (out != n * (n + 1) / 2) ctx.fail("sum " + std::to_string(out));
  ctx.report("sum", std::to_string(out));
  ncclCommDestroy(comm);
}

TEST(Threads, AllRanksFormACommunicator) {
  RunReport report = runThreads(4, sumOfRanks);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  EXPECT_EQ(report.ranks.size(), 4u);
  for (const std::string& v : report.valuesOf("sum")) EXPECT_EQ(v, "10");
}

TEST(Threads, FailuresAndExceptionsArePerRank) {
  RunReport report = runThreads(3, [](RankContext& ctx) {
    if (ctx.rank() == 1) ctx.fail("rank one says no");
    if (ctx.rank() == 2) throw std::runtime_error("rank two threw");
  });
  EXPECT_FALSE(report.ok());
  ASSERT_EQ(report.ranks.size(), 3u);
  EXPECT_EQ(report.ranks[0].outcome, Outcome::kOk);
  EXPECT_EQ(report.ranks[1].outcome, Outcome::kFailed);
  ASSERT_EQ(report.ranks[1].failures.size(), 1u);
  EXPECT_EQ(report.ranks[1].failures[0], "rank one says no");
  EXPECT_EQ(report.ranks[2].outcome, Outcome::kException);
  EXPECT_NE(report.describe().find("rank two threw"), std::string::npos) << report.describe();
}

TEST(Threads, EnvironmentIsSetForTheRunAndRestored) {
  unsetenv("BRAID_HARNESS_TEST_VAR");
  RunOptions options;
  options.env = {{"BRAID_HARNESS_TEST_VAR", "42"}};
  RunReport report = runThreads(
      2,
      [](RankContext& ctx) {
        const char* v = getenv("BRAID_HARNESS_TEST_VAR");
        ctx.report("var", v ? v : "(unset)");
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  for (const std::string& v : report.valuesOf("var")) EXPECT_EQ(v, "42");
  EXPECT_EQ(getenv("BRAID_HARNESS_TEST_VAR"), nullptr);
}

TEST(Processes, AllRanksFormACommunicator) {
  RunReport report = runProcesses(3, sumOfRanks);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  std::vector<std::string> pids;
  for (const RankResult& r : report.ranks) pids.push_back(r.where);
  EXPECT_NE(pids[0], pids[1]);
  for (const std::string& v : report.valuesOf("sum")) EXPECT_EQ(v, "6");
}

TEST(Processes, ValuesSurviveThePipe) {
  const std::string tricky = "line one\nline\ttwo \\ end";
  RunReport report = runProcesses(2, [&](RankContext& ctx) { ctx.report("k\ney", tricky); });
  BRAID_ASSERT_ALL_RANKS_OK(report);
  for (const std::string& v : report.valuesOf("k\ney")) EXPECT_EQ(v, tricky);
}

TEST(Processes, AssertionFailuresInChildrenComeBack) {
  RunReport report = runProcesses(2, [](RankContext& ctx) {
    if (ctx.rank() == 1) {
      EXPECT_EQ(1 + 1, 3) << "child arithmetic";
    }
  });
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.ranks[0].outcome, Outcome::kOk);
  EXPECT_EQ(report.ranks[1].outcome, Outcome::kFailed);
  EXPECT_NE(report.describe().find("child arithmetic"), std::string::npos) << report.describe();
}

TEST(Processes, ExitCodesSignalsAndExceptionsAreReported) {
  RunReport report = runProcesses(4, [](RankContext& ctx) {
    if (ctx.rank() == 1) _exit(7);
    if (ctx.rank() == 2) raise(SIGABRT);
    if (ctx.rank() == 3) throw std::runtime_error("boom");
  });
  ASSERT_EQ(report.ranks.size(), 4u);
  EXPECT_EQ(report.ranks[0].outcome, Outcome::kOk);
  EXPECT_EQ(report.ranks[1].outcome, Outcome::kExited);
  EXPECT_EQ(report.ranks[1].exitCode, 7);
  EXPECT_EQ(report.ranks[2].outcome, Outcome::kSignaled);
  EXPECT_EQ(report.ranks[2].signal, SIGABRT);
  EXPECT_EQ(report.ranks[3].outcome, Outcome::kException);
}

TEST(Processes, StragglersAreKilledAtTheDeadline) {
  RunOptions options;
  options.timeoutS = 1;
  auto start = std::chrono::steady_clock::now();
  RunReport report = runProcesses(
      2,
      [](RankContext& ctx) {
        if (ctx.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
      },
      options);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(elapsed, 10);
  EXPECT_EQ(report.ranks[0].outcome, Outcome::kOk);
  EXPECT_EQ(report.ranks[1].outcome, Outcome::kTimedOut);
}

// True while `pid` runs (a zombie, possibly never reaped by a container's init, counts as gone).
bool running(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  FILE* f = fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  const char* close = strrchr(buf, ')');
  return n > 0 && close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

TEST(Processes, RanksDieWithTheTestProcess) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t testProcess = fork();
  ASSERT_GE(testProcess, 0);
  if (testProcess == 0) {
    // A stand-in for a test process that gets killed (e.g. by CTest's timeout) mid-run.
    close(fds[0]);
    runProcesses(1, [&](RankContext&) {
      pid_t me = getpid();
      (void)!write(fds[1], &me, sizeof(me));
      std::this_thread::sleep_for(std::chrono::seconds(60));
    });
    _exit(0);
  }
  close(fds[1]);
  pid_t rank = -1;
  ASSERT_EQ(read(fds[0], &rank, sizeof(rank)), static_cast<ssize_t>(sizeof(rank)));
  close(fds[0]);
  ASSERT_TRUE(running(rank));
  kill(testProcess, SIGKILL);
  waitpid(testProcess, nullptr, 0);
  for (int i = 0; i < 100 && running(rank); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(running(rank)) << "rank process " << rank << " outlived the test process";
  if (running(rank)) kill(rank, SIGKILL);
}

TEST(Processes, IdFromEnvironmentLetsRankZeroHostTheRendezvous) {
  RunOptions options;
  // Rank 0 listens on this port.
  options.env = {{"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(freeLocalPort())},
                 {"BRAID_COMM_SECRET", "00112233445566778899aabbccddeeff"},
                 {"NCCL_SOCKET_IFNAME", "lo"}};
  options.idFromEnvironment = true;
  RunReport report = runProcesses(3, sumOfRanks, options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::test
