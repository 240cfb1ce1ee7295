// Network failures between "hosts" (label netns): ranks in separate network namespaces, one of
// which is cut off from the bridge before or during the run, or whose rendezvous host never
// comes. TCP alone would wait for minutes (retransmissions to a silent peer); Braid's ranks must
// all return an error within their deadline: BRAID_TIMEOUT_S where init cannot complete, and a
// short per-communicator one (braidCommSetTimeout) for the calls after init, which a loaded
// machine's init could not meet.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace braid::test {
namespace {

constexpr double kInitTimeoutS = 5;    // BRAID_TIMEOUT_S where init is to succeed
constexpr double kCallTimeoutS = 0.5;  // every call after init, and init that cannot succeed
constexpr double kSlackS = 2.5;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

NamespaceOptions failureOptions(double timeoutS) {
  NamespaceOptions options;
  options.namespaces = 3;
  options.env = {{"BRAID_TIMEOUT_S", std::to_string(timeoutS)}};
  options.timeoutS = 60;
  return options;
}

// Initialises and allreduces until a call fails (at most 60 s); reports where and how long the
// failing call took. The calls wait at most kCallTimeoutS.
void reduceUntilFailure(RankContext& ctx) {
  std::vector<float> buf(1 << 16, 1.0f);
  double start = now();
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
  if (r != ncclSuccess) {
    ctx.report("failed_in", "init");
    ctx.report("failed_call_s", std::to_string(now() - start));
    ctx.report("error", ncclGetLastError(nullptr));
    return;
  }
  if (braidCommSetTimeout(comm, kCallTimeoutS) != ncclSuccess)
    ctx.fail(std::string("braidCommSetTimeout: ") + ncclGetLastError(comm));
  int done = 0;
  for (double limit = now() + 60; now() < limit; done++) {
    start = now();
    r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
    if (r != ncclSuccess) break;
  }
  ctx.report("completed", std::to_string(done));
  if (r == ncclSuccess) {
    ctx.fail("allreduces kept succeeding for 60 s");
  } else {
    ctx.report("failed_in", "allreduce");
    ctx.report("failed_call_s", std::to_string(now() - start));
    ctx.report("error", ncclGetLastError(comm));
  }
  start = now();
  ncclCommAbort(comm);
  if (now() - start > 2) ctx.fail("ncclCommAbort took " + std::to_string(now() - start) + " s");
}

void expectEveryRankFailedInTime(const RunReport& report, const char* where, double timeoutS) {
  if (isNamespaceChild()) return;
  BRAID_ASSERT_ALL_RANKS_OK(report);
  for (const RankResult& r : report.ranks) {
    auto value = [&](const char* key) {
      auto it = r.values.find(key);
      return it == r.values.end() ? std::string() : it->second;
    };
    ASSERT_FALSE(value("failed_call_s").empty()) << report.describe();
    EXPECT_LE(std::stod(value("failed_call_s")), timeoutS + kSlackS)
        << "rank " << r.rank << " in " << value("failed_in") << ": " << value("error");
    if (where) {
      EXPECT_EQ(value("failed_in"), where) << "rank " << r.rank << ": " << value("error");
    }
    EXPECT_FALSE(value("error").empty()) << "rank " << r.rank;
  }
}

TEST(NetworkFailure, AHostCutOffMidRunFailsEveryRankInTime) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  NamespaceOptions options = failureOptions(kInitTimeoutS);
  options.duringRun = [](NetworkControl& net) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    net.setConnected(2, false);
  };
  RunReport report = runInNamespaces(3, reduceUntilFailure, options);
  expectEveryRankFailedInTime(report, "allreduce", kCallTimeoutS);
  if (!isNamespaceChild()) {
    for (const std::string& done : report.valuesOf("completed"))
      EXPECT_GT(std::stoi(done), 0) << "the cut came before any allreduce completed";
  }
}

TEST(NetworkFailure, AHostCutOffBeforeInitFailsEveryRankInTime) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  NamespaceOptions options = failureOptions(kCallTimeoutS);
  options.beforeRun = [](NetworkControl& net) { net.setConnected(1, false); };
  RunReport report = runInNamespaces(3, reduceUntilFailure, options);
  expectEveryRankFailedInTime(report, "init", kCallTimeoutS);
}

TEST(NetworkFailure, ARendezvousHostThatNeverComesFailsInit) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  // Rank 0 hosts the rendezvous (NCCL_COMM_ID) and exits at once: the others knock on a closed
  // port until their deadline.
  RunReport report = runInNamespaces(
      3,
      [](RankContext& ctx) {
        if (ctx.rank() == 0) _exit(3);
        reduceUntilFailure(ctx);
      },
      failureOptions(kCallTimeoutS));
  if (isNamespaceChild()) return;
  ASSERT_EQ(report.ranks.size(), 3u);
  EXPECT_EQ(report.ranks[0].outcome, Outcome::kExited);
  RunReport survivors = report;
  survivors.ranks.erase(survivors.ranks.begin());
  expectEveryRankFailedInTime(survivors, "init", kCallTimeoutS);
}

}  // namespace
}  // namespace braid::test
