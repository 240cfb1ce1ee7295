// A rank that dies or stops calling (label fault): kill -9 of the first, a middle or the last
// rank during init, between operations or in the middle of a large allreduce, and a rank that
// stops calling. Death is detectable (a dead pid on shared memory, a closed socket on TCP), so
// every survivor must fail well before BRAID_TIMEOUT_S; a rank that merely stops calling is
// alive, so the others fail at the deadline, not before. Nothing may hang, crash, return a wrong
// result or stay behind in /dev/shm.
#include <signal.h>
#include <unistd.h>

#include <thread>

#include "fault/fault_run.h"

namespace braid::fault {
namespace {

using test::RankContext;

enum class Moment { kInit, kBetweenOps, kMidAllReduce };
const char* momentName(Moment m) {
  return m == Moment::kInit         ? "during init"
         : m == Moment::kBetweenOps ? "between ops"
                                    : "mid allreduce";
}

struct Death {
  Wire wire;
  int nranks;
  int victim;
  Moment moment;
  const char* algo;
};

std::string victimName(const Death& d) {
  if (d.victim == 0) return "rank 0";
  if (d.victim == d.nranks - 1) return "last rank";
  return "middle rank";
}

void PrintTo(const Death& d, std::ostream* os) {
  *os << wireName(d.wire) << " " << d.nranks << " ranks, kill " << victimName(d) << " "
      << momentName(d.moment) << " " << d.algo;
}

constexpr int kOpsBefore = 3;               // completed allreduces before the fault
constexpr size_t kSmall = 4099;             // a prime: chunks of every length
constexpr size_t kLarge = size_t(2) << 20;  // 8 MiB of int32 in 64 KiB slots: long enough
constexpr double kDeathTimeoutS = 10;       // the deadline death must beat
constexpr double kDetectS = 3;              // by this much (plus scheduling slack)
// The survivors of a rank 0 killed during init wait out this deadline at the rendezvous.
constexpr double kRootGoneTimeoutS = 0.5;

[[noreturn]] void killSelf() {
  kill(getpid(), SIGKILL);
  for (;;) pause();
}

void killSelfAfter(double seconds) {
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    killSelf();
  }).detach();
}

void victim(RankContext& ctx, const Death& d) {
  if (d.moment == Moment::kInit) killSelfAfter(0.005 + 0.01 * d.victim);
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank()) != ncclSuccess) killSelf();
  for (int i = 0; i < kOpsBefore; i++) checkedAllReduce(ctx, comm, kSmall, i);
  if (d.moment == Moment::kBetweenOps) killSelf();
  if (d.moment == Moment::kMidAllReduce) killSelfAfter(0.01);
  for (int i = kOpsBefore;; i++) checkedAllReduce(ctx, comm, kLarge, i);
}

class KillRank : public ::testing::TestWithParam<Death> {};

TEST_P(KillRank, SurvivorsFailPromptly) {
  const Death d = GetParam();
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(d.wire);
  auto before = braidShmEntries();
  // Rank 0 hosts the rendezvous: killed before the others reached it, it is indistinguishable
  // from a rank 0 that has not started yet, so they knock until the deadline (a shorter one).
  const bool rootMayBeGone = d.victim == 0 && d.moment == Moment::kInit;
  FaultOptions options;
  options.timeoutS = rootMayBeGone ? kRootGoneTimeoutS : kDeathTimeoutS;
  options.env = {{"NCCL_ALGO", d.algo}};
  test::RunReport report = runFaultRanks(
      d.wire, d.nranks,
      [d](RankContext& ctx) {
        if (ctx.rank() == d.victim) victim(ctx, d);
        reduceUntilFailure(ctx, kOpsBefore, kSmall,
                           d.moment == Moment::kMidAllReduce ? kLarge : kSmall, 40);
      },
      options);
  if (isRankChild()) return;
  Verdict v;
  v.ranks.assign(d.nranks, Expect::kError);
  v.ranks[d.victim] = Expect::kKilled;
  v.maxErrorS = rootMayBeGone ? kRootGoneTimeoutS : kDetectS;
  std::string name = "kill -9 " + victimName(d) + " " + momentName(d.moment);
  if (d.nranks != 4 || std::string(d.algo) != "Ring")
    name += ", " + std::to_string(d.nranks) + " ranks " + d.algo;
  judge(name, d.wire, report, leftoverShm(before), v);
}

std::vector<Death> deaths() {
  std::vector<Death> out;
#ifdef BRAID_FAULT_LONG
  const std::vector<int> rankCounts = {3, 5, 8};
  const std::vector<const char*> algos = {"Ring", "Tree"};
#else
  const std::vector<int> rankCounts = {4};
  const std::vector<const char*> algos = {"Ring"};
#endif
  for (Wire wire : {Wire::kShm, Wire::kTcp})
    for (int n : rankCounts)
      for (const char* algo : algos)
        for (int victim : {0, n / 2, n - 1})
          for (Moment m : {Moment::kInit, Moment::kBetweenOps, Moment::kMidAllReduce})
            out.push_back({wire, n, victim, m, algo});
  // Over the UCX net plugin: a middle rank killed between and inside allreduces.
  for (Moment m : {Moment::kBetweenOps, Moment::kMidAllReduce})
    out.push_back({Wire::kNet, 4, 2, m, "Ring"});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fault, KillRank, ::testing::ValuesIn(deaths()),
                         [](const ::testing::TestParamInfo<Death>& info) {
                           const Death& d = info.param;
                           const char* moment = d.moment == Moment::kInit         ? "Init"
                                                : d.moment == Moment::kBetweenOps ? "Between"
                                                                                  : "Mid";
                           return std::string(wireTag(d.wire)) + "_" + std::to_string(d.nranks) +
                                  "ranks_" + d.algo + "_victim" + std::to_string(d.victim) + "_" +
                                  moment;
                         });

// --- A rank that stops calling -----------------------------------------------------------------

// The deadline of the call that waits for the silent rank (braidCommSetTimeout); init and the
// first calls keep the suite's BRAID_TIMEOUT_S.
constexpr double kStallTimeoutS = 0.5;

class StopCalling : public ::testing::TestWithParam<Wire> {};

TEST_P(StopCalling, OthersFailAtTheDeadline) {
  const Wire wire = GetParam();
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(wire);
  auto before = braidShmEntries();
  constexpr int kStalled = 2;
  FaultOptions options;
  options.env = {{"NCCL_ALGO", "allreduce:ring"}};
  test::RunReport report = runFaultRanks(
      wire, 4,
      [](RankContext& ctx) {
        // The others go on with large calls, whose sends out of and receives into the
        // user's buffers (TCP) must be let go of when the call fails.
        if (ctx.rank() != kStalled)
          return reduceUntilFailure(ctx, kOpsBefore, kSmall, kLarge, 40, kStallTimeoutS);
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        for (int i = 0; i < kOpsBefore; i++) checkedAllReduce(ctx, comm, kSmall, i);
        // Alive but silent for longer than the others' deadline.
        std::this_thread::sleep_for(std::chrono::duration<double>(kStallTimeoutS + 2));
        ctx.report("stalled", "1");
        ncclCommAbort(comm);
      },
      options);
  if (isRankChild()) return;
  Verdict v;
  v.ranks.assign(4, Expect::kError);
  v.ranks[kStalled] = Expect::kVictimAny;
  v.maxErrorS = kStallTimeoutS;
  v.minErrorS = kStallTimeoutS - 0.05;  // the peer is alive: no error before the deadline
  v.failedIn = "allreduce #3";          // the first call the silent rank does not make
  v.someErrorMentions = "timed out";
  judge("middle rank stops calling", wire, report, leftoverShm(before), v, "calls' deadline 0.5 s");
}

INSTANTIATE_TEST_SUITE_P(Fault, StopCalling, ::testing::Values(Wire::kShm, Wire::kTcp, Wire::kNet),
                         [](const ::testing::TestParamInfo<Wire>& info) {
                           return std::string(wireTag(info.param));
                         });

}  // namespace
}  // namespace braid::fault
