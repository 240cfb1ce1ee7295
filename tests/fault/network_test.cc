// A bad network between the namespaces of 4 TCP ranks (label fault): a link that goes down in
// the middle of a run (every rank fails within the deadline: TCP alone would retransmit for
// minutes), and a lossy, slow link (every result stays exact, or an error arrives within the
// deadline). The loss uses netem (`loss 5% delay 50ms`) where the kernel has it, otherwise a
// token bucket whose full queue drops packets and delays the rest by up to 50 ms.
#include <thread>

#include "fault/fault_run.h"

namespace braid::fault {
namespace {

using test::RankContext;

void linkDownMidRun(Wire wire) {
  // The calls after the first wait at most this long; init and the first call keep the suite's
  // BRAID_TIMEOUT_S, so that only the cut can end the run.
  constexpr double kTimeoutS = 0.5;
  FaultOptions options;
  options.duringRun = [](test::NetworkControl& net) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    net.setConnected(1, false);
  };
  test::RunReport report = runFaultRanks(
      wire, 4, [](RankContext& ctx) { reduceUntilFailure(ctx, 1, 65536, 65536, 40, kTimeoutS); },
      options);
  if (isRankChild()) return;
  Verdict v;
  v.ranks.assign(4, Expect::kError);
  v.maxErrorS = kTimeoutS;
  v.failedIn = "allreduce";
  judge("link down mid-run (`ip link set` host 1 down)", wire, report, "", v,
        "ranks 1, 3 on host 1");
}

TEST(Network, LinkDownMidRunFailsEveryRankWithinTheDeadline) {
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(Wire::kTcp);
  linkDownMidRun(Wire::kTcp);
}

TEST(Network, LinkDownMidRunOverUcxFailsEveryRankWithinTheDeadline) {
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(Wire::kNet);
  linkDownMidRun(Wire::kNet);
}

// Set in the parent by beforeRun: which impairment the kernel accepted.
std::string impairment;

bool impair(test::NetworkControl& net, int host) {
  std::string out;
  std::vector<std::string> netem = {"tc",    "qdisc", "add", "dev",   "eth0", "root",
                                    "netem", "loss",  "5%",  "delay", "50ms"};
  if (net.runInHost(host, netem, &out)) {
    impairment = "netem loss 5% delay 50ms";
    return true;
  }
  std::vector<std::string> tbf = {"tc",   "qdisc",  "add",   "dev",  "eth0",    "root", "tbf",
                                  "rate", "20mbit", "burst", "16kb", "latency", "50ms"};
  if (net.runInHost(host, tbf, &out)) {
    impairment = "no netem in this kernel: tbf 20mbit, 50 ms queue, tail drops";
    return true;
  }
  impairment = "no impairment possible: " + out;
  return false;
}

TEST(Network, LossyDelayedLinkKeepsResultsExact) {
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(Wire::kTcp);
  constexpr double kTimeoutS = 20;
  FaultOptions options;
  options.timeoutS = kTimeoutS;
  options.beforeRun = [](test::NetworkControl& net) {
    for (int host = 0; host < 2; host++) impair(net, host);
  };
  test::RunReport report = runFaultRanks(
      Wire::kTcp, 4,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        const size_t counts[] = {1, 4099, 65536, 262144};
        int done = 0;
        for (; done < 8; done++) {
          double start = now();
          ncclResult_t r = checkedAllReduce(ctx, comm, counts[done % 4], done);
          if (r != ncclSuccess) {
            reportFailure(ctx, "allreduce #" + std::to_string(done), r, now() - start,
                          ncclGetLastError(comm));
            break;
          }
        }
        ctx.report("completed", std::to_string(done));
        ncclCommAbort(comm);
      },
      options);
  if (isRankChild()) return;
  EXPECT_EQ(impairment.rfind("no impairment", 0), std::string::npos) << impairment;
  Verdict v;
  v.ranks.assign(4, Expect::kSuccessOrError);
  v.maxErrorS = kTimeoutS;
  judge("lossy, delayed link on both hosts", Wire::kTcp, report, "", v, impairment);
}

}  // namespace
}  // namespace braid::fault
