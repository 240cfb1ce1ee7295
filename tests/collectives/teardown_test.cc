// Peers that finish and destroy their communicators first: the closed connections a rank meets
// afterwards (pulling every TCP receive while it waits for another peer, or on its own way out)
// are those peers leaving, not an error of the call it is in. The call succeeds and leaves the
// calling thread's last error as it was (nccl-tests prints ncclGetLastError(NULL) at the end of
// a run: a stale "connection closed by peer" there reads as a failure).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

// Rank 1 sends rank 0 one message and, once it has arrived, leaves; rank 2 sends rank 0 its
// message only once rank 1 has gone, so rank 0 waits for it with rank 1's closed socket among
// those it pulls meanwhile. `stage`: 1 when rank 0 has rank 1's message, 2 when rank 1 has gone.
void waitsWhileAnotherLeaves(RankContext& ctx, std::atomic<int>* stage) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  auto waitFor = [stage](int s) {
    while (stage->load() < s) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::vector<int32_t> message(17, ctx.rank() * 1000);
  auto receive = [&](int from, const char* what) {
    if (ncclRecv(message.data(), message.size(), ncclInt32, from, comm, nullptr) != ncclSuccess)
      return ctx.fail(std::string(what) + ": " + ncclGetLastError(comm));
    for (size_t i = 0; i < message.size(); i++)
      if (message[i] != from * 1000) return ctx.fail(std::string(what) + ": wrong data");
  };
  auto destroy = [&] {
    const std::string before = ncclGetLastError(nullptr);
    if (ncclCommDestroy(comm) != ncclSuccess) return ctx.fail("destroy");
    const std::string after = ncclGetLastError(nullptr);
    if (after != before) ctx.fail("destroy left the last error \"" + after + "\"");
  };
  if (ctx.rank() == 0) {
    receive(1, "receive from rank 1");
    stage->store(1);
    const std::string before = ncclGetLastError(nullptr);
    receive(2, "receive from rank 2");
    const std::string after = ncclGetLastError(nullptr);
    if (after != before) ctx.fail("a receive from rank 2 left the last error \"" + after + "\"");
    return destroy();
  }
  if (ctx.rank() == 2) {
    waitFor(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (ncclSend(message.data(), message.size(), ncclInt32, 0, comm, nullptr) != ncclSuccess)
    ctx.fail(std::string("send: ") + ncclGetLastError(comm));
  if (ctx.rank() == 1) waitFor(1);
  destroy();
  if (ctx.rank() == 1) stage->store(2);
}

void run(int nranks, const char* transports, void (*rankFn)(RankContext&, std::atomic<int>*)) {
  std::atomic<int> shared{0};
  braid::test::RunOptions o;
  o.timeoutS = 60;
  o.env = {{"BRAID_TRANSPORTS", transports}, {"BRAID_TIMEOUT_S", "20"}};
  auto report = braid::test::runThreads(
      nranks, [&](RankContext& ctx) { rankFn(ctx, &shared); }, o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(Teardown, AWaitAmongClosedConnectionsLeavesNoError) {
  run(3, "tcp", waitsWhileAnotherLeaves);
}

}  // namespace
