// ncclCommAbort from another thread while calls are blocked (label fault): three ranks wait in a
// large allreduce that the fourth never joins; on every rank a second thread aborts the
// communicator. Each blocked call must return an error within 1 s of the abort, the abort itself
// must return within 1 s, and nothing may stay behind in /dev/shm.
#include <atomic>
#include <thread>

#include "fault/fault_run.h"

namespace braid::fault {
namespace {

using test::RankContext;

constexpr double kAbortAfterS = 0.5;  // the calls are surely blocked by then
constexpr double kWithinS = 1;
constexpr int kAbsent = 3;

void abortingRank(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  std::atomic<double> abortStarted{0}, abortSeconds{0};
  std::atomic<int> abortResult{ncclSuccess};
  std::string abortText;
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kAbortAfterS));
    double start = now();
    abortStarted = start;
    ncclResult_t r = ncclCommAbort(comm);
    abortSeconds = now() - start;
    if (r != ncclSuccess) abortText = ncclGetLastError(nullptr);
    abortResult = r;
  });
  if (ctx.rank() != kAbsent) {
    std::vector<float> buf(size_t(1) << 20, 1.0f);
    double start = now();
    ncclResult_t r =
        ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
    double end = now();
    // The communicator may be gone already: the thread's last error, not the communicator's.
    std::string text = ncclGetLastError(nullptr);
    if (r == ncclSuccess) {
      ctx.fail("the allreduce completed although rank 3 never joined");
    } else {
      reportFailure(ctx, "allreduce", r, end - start, text);
      while (abortStarted.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      double afterAbort = end - abortStarted.load();
      ctx.report("ended_after_abort_s", std::to_string(afterAbort));
      if (afterAbort > kWithinS)
        ctx.fail("the blocked call ended " + std::to_string(afterAbort) + " s after the abort");
      if (afterAbort < -0.05) ctx.fail("the call failed before the abort: " + text);
    }
  }
  aborter.join();
  if (abortResult.load() != ncclSuccess) ctx.fail("ncclCommAbort: " + abortText);
  ctx.report("abort_s", std::to_string(abortSeconds.load()));
  if (abortSeconds.load() > kWithinS)
    ctx.fail("ncclCommAbort took " + std::to_string(abortSeconds.load()) + " s");
}

class AbortFromAnotherThread : public ::testing::TestWithParam<Wire> {};

TEST_P(AbortFromAnotherThread, BlockedCallsEndWithinOneSecond) {
  const Wire wire = GetParam();
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(wire);
  auto before = braidShmEntries();
  FaultOptions options;
  options.timeoutS = 60;  // far away: only the abort may end the calls
  test::RunReport report = runFaultRanks(wire, 4, abortingRank, options);
  if (isRankChild()) return;
  Verdict v;
  v.ranks.assign(4, Expect::kError);
  v.ranks[kAbsent] = Expect::kSuccess;  // never calls; its own abort must succeed
  v.maxErrorS = kAbortAfterS + kWithinS;
  v.minErrorS = kAbortAfterS - 0.05;
  // Which error a blocked call sees depends on the race between its own abort flag and the
  // peers' sockets closing (their aborts): ncclInvalidUsage "aborted" or ncclRemoteError.
  judge("ncclCommAbort from another thread mid-allreduce", wire, report, leftoverShm(before), v,
        "abort at 0.5 s, rank 3 never calls");
}

INSTANTIATE_TEST_SUITE_P(Fault, AbortFromAnotherThread, ::testing::Values(Wire::kShm, Wire::kTcp),
                         [](const ::testing::TestParamInfo<Wire>& info) {
                           return std::string(wireTag(info.param));
                         });

}  // namespace
}  // namespace braid::fault
