// Communicator lifecycles across processes (label multiproc): many communicators one after the
// other on one NCCL_COMM_ID, two alive at once with different rank orders, abort instead of
// destroy, and no shared-memory segment left behind by any of it.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"

namespace braid::test {
namespace {

std::set<std::string> braidShmSegments() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* e = readdir(dir))
      if (std::string(e->d_name).rfind("braid-", 0) == 0) names.insert(e->d_name);
    closedir(dir);
  }
  return names;
}

// New segments still present after the run (other processes' live ones come and go quickly).
std::vector<std::string> newSegments(const std::set<std::string>& before) {
  std::vector<std::string> left;
  for (int attempt = 0; attempt < 10; attempt++) {
    left.clear();
    for (const std::string& name : braidShmSegments())
      if (!before.count(name)) left.push_back(name);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return left;
}

// Rank r contributes (r + 1) * (i + salt) at element i; the sum is n(n+1)/2 * (i + salt).
bool reduceAndCheck(RankContext& ctx, ncclComm_t comm, int rank, int nranks, int salt,
                    size_t count) {
  std::vector<double> in(count), out(count, -1);
  for (size_t i = 0; i < count; i++) in[i] = (rank + 1) * static_cast<double>(i + salt);
  ncclResult_t r = ncclAllReduce(in.data(), out.data(), count, ncclFloat64, ncclSum, comm, nullptr);
  if (r != ncclSuccess) {
    ctx.fail(std::string("ncclAllReduce: ") + ncclGetLastError(comm));
    return false;
  }
  const double scale = nranks * (nranks + 1) / 2.0;
  for (size_t i = 0; i < count; i++) {
    if (out[i] != scale * static_cast<double>(i + salt)) {
      ctx.fail("salt " + std::to_string(salt) + " element " + std::to_string(i) + ": " +
               std::to_string(out[i]));
      return false;
    }
  }
  return true;
}

RunOptions commonOptions() {
  RunOptions options;
  options.env = {
      {"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "20"}, {"BRAID_SLOT_BYTES", "4096"}};
  options.timeoutS = 120;
  return options;
}

TEST(Lifecycle, ManyCommunicatorsInSequenceOnOneCommId) {
  auto before = braidShmSegments();
  RunOptions options = commonOptions();
  options.idFromEnvironment = true;
  options.env.push_back({"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(freeLocalPort())});
  options.env.push_back({"BRAID_COMM_SECRET", "fedcba9876543210fedcba9876543210"});
  RunReport report = runProcesses(
      4,
      [](RankContext& ctx) {
        for (int round = 0; round < 12; round++) {
          ncclComm_t comm = ctx.initComm();
          if (!comm) return;
          bool ok = reduceAndCheck(ctx, comm, ctx.rank(), ctx.nranks(), round, 5000);
          // Alternate destroy and abort: both must release everything.
          ncclResult_t r = round % 2 ? ncclCommAbort(comm) : ncclCommDestroy(comm);
          if (r != ncclSuccess) ctx.fail(std::string("release: ") + ncclGetLastError(nullptr));
          if (!ok) return;
        }
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  EXPECT_EQ(newSegments(before), std::vector<std::string>{});
}

TEST(Lifecycle, TwoCommunicatorsAtOnceWithDifferentRankOrders) {
  auto before = braidShmSegments();
  RunOptions options = commonOptions();
  ncclUniqueId second;
  {
    // Made in the parent like the harness's own id, so its root runs here too.
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    ASSERT_EQ(ncclGetUniqueId(&second), ncclSuccess) << ncclGetLastError(nullptr);
  }
  RunReport report = runProcesses(
      3,
      [&second](RankContext& ctx) {
        const int n = ctx.nranks();
        const int reversed = n - 1 - ctx.rank();
        ncclComm_t a = ctx.initComm();
        ncclComm_t b = nullptr;
        if (ncclCommInitRank(&b, n, second, reversed) != ncclSuccess)
          ctx.fail(std::string("second communicator: ") + ncclGetLastError(nullptr));
        if (!a || !b) return;
        int rankInB = -1;
        ncclCommUserRank(b, &rankInB);
        if (rankInB != reversed)
          ctx.fail("rank in the second communicator: " + std::to_string(rankInB));
        for (int round = 0; round < 6; round++) {
          if (!reduceAndCheck(ctx, a, ctx.rank(), n, round, 3001)) break;
          if (!reduceAndCheck(ctx, b, reversed, n, 100 + round, 7919)) break;
        }
        ncclCommDestroy(b);
        ncclCommDestroy(a);
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  EXPECT_EQ(newSegments(before), std::vector<std::string>{});
}

TEST(Lifecycle, InitAllInOneProcessNextToOtherProcesses) {
  // Each process also builds a private 3-device communicator with ncclCommInitAll and drives it
  // with a group, while the processes share a communicator of their own.
  RunReport report = runProcesses(
      2,
      [](RankContext& ctx) {
        ncclComm_t shared = ctx.initComm();
        ncclComm_t local[3] = {};
        if (ncclCommInitAll(local, 3, nullptr) != ncclSuccess) {
          ctx.fail(std::string("ncclCommInitAll: ") + ncclGetLastError(nullptr));
          return;
        }
        int in[3][4], out[3][4];
        for (int d = 0; d < 3; d++)
          for (int i = 0; i < 4; i++) in[d][i] = (d + 1) * (i + 1), out[d][i] = 0;
        ncclGroupStart();
        for (int d = 0; d < 3; d++)
          ncclAllReduce(in[d], out[d], 4, ncclInt32, ncclSum, local[d], nullptr);
        if (ncclGroupEnd() != ncclSuccess)
          ctx.fail(std::string("group: ") + ncclGetLastError(nullptr));
        for (int d = 0; d < 3; d++)
          for (int i = 0; i < 4; i++)
            if (out[d][i] != 6 * (i + 1))
              ctx.fail("local communicator result " + std::to_string(out[d][i]));
        if (shared) {
          reduceAndCheck(ctx, shared, ctx.rank(), ctx.nranks(), 7, 100);
          ncclCommDestroy(shared);
        }
        for (ncclComm_t c : local) ncclCommDestroy(c);
      },
      commonOptions());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::test
