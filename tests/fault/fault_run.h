// The fault suite's common ground: running 4 ranks over shared memory (forked processes, rank 0
// hosting the rendezvous as under braidrun) or over TCP (processes in two network namespaces),
// the rank-side steps every scenario shares (exactly checked allreduces, reporting a failed call
// with its code, text and duration), the /dev/shm leftover check, and the assertions that hold
// for every scenario: no hang, no crash, no wrong result, an error that names its cause in time.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fault/fault_table.h"
#include "harness/rank_harness.h"

namespace braid::fault {

/// Where the ranks run and what carries their data.
enum class Wire {
  kShm,  ///< forked processes on this host, shared memory between them
  kTcp,  ///< processes in two network namespaces, TCP between every pair
  kNet,  ///< processes in two network namespaces, the UCX net plugin (over UCX's TCP) between
         ///< every pair (built where UCX is: transports/net/ucx)
};
const char* wireName(Wire wire);
/// A short name for test names: shm, tcp, net.
const char* wireTag(Wire wire);

/// Seconds since an arbitrary fixed point (monotonic).
double now();

struct FaultOptions {
  double timeoutS = 8;  ///< BRAID_TIMEOUT_S of the ranks
  double limitS = 90;   ///< the harness kills whatever still runs after this (a hang)
  std::vector<std::pair<std::string, std::string>> env;  ///< on top of the suite's defaults
  /// Only for kTcp and kNet: run on a parent thread once the ranks started / before they start.
  std::function<void(test::NetworkControl&)> duringRun;
  std::function<void(test::NetworkControl&)> beforeRun;
};

/// Runs `fn` on `nranks` ranks over `wire`. In a namespace rank child it runs that rank only and
/// the returned report means nothing (tests return at once: see isRankChild()).
test::RunReport runFaultRanks(Wire wire, int nranks, const test::RankFn& fn,
                              const FaultOptions& options);
/// True in a process started by runFaultRanks to be one rank (namespace runs re-enter the test).
bool isRankChild();
/// Empty when `wire` can run here; otherwise why not (namespaces need root, net needs UCX).
std::string wireUnavailableReason(Wire wire);
/// Skips the test when `wire` cannot run here.
#define BRAID_FAULT_SKIP_UNLESS_AVAILABLE(wire)                          \
  do {                                                                   \
    if (!::braid::test::isNamespaceChild()) {                            \
      std::string reason_ = ::braid::fault::wireUnavailableReason(wire); \
      if (!reason_.empty()) GTEST_SKIP() << reason_;                     \
    }                                                                    \
  } while (0)

// --- Rank side ---------------------------------------------------------------------------------

/// One exactly checked int32 sum allreduce: rank r contributes (r + 1) * ((i % 1000) + salt) at
/// element i, the output is poisoned first, and every element is compared. A wrong element is
/// recorded as a failure (a wrong result); returns the call's result.
ncclResult_t checkedAllReduce(test::RankContext& ctx, ncclComm_t comm, size_t count, int salt);

/// Records that the call `where` failed with `result` after `seconds`: values failed_in, error_s,
/// code, error (ncclGetLastError's text).
void reportFailure(test::RankContext& ctx, const std::string& where, ncclResult_t result,
                   double seconds, const std::string& text);

/// After a failure: the communicator stays failed (a further call fails at once) and abort is
/// prompt; records abort_s and failures where either does not hold.
void checkFailedCommunicator(test::RankContext& ctx, ncclComm_t comm);

/// ncclInit + allreduces until one fails or `limitS` passes (a failure: nothing went wrong).
/// `first` ops of `count` elements, then `laterCount` for the rest; records completed. With
/// `laterTimeoutS` > 0 the ops after the first ones wait at most that long
/// (braidCommSetTimeout): a scenario that waits out a deadline gets a short one there, while
/// init and the first ops keep BRAID_TIMEOUT_S, which a loaded machine cannot run out.
void reduceUntilFailure(test::RankContext& ctx, int first, size_t count, size_t laterCount,
                        double limitS, double laterTimeoutS = 0);

/// ncclResult_t as its enum name.
const char* codeName(ncclResult_t r);

// --- Parent side -------------------------------------------------------------------------------

/// /dev/shm entries whose name starts with "braid" right now.
std::set<std::string> braidShmEntries();
/// Entries that appeared since `before` and are still there after a short grace; removed, so a
/// failure does not litter the next test. "" when none.
std::string leftoverShm(const std::set<std::string>& before);

/// What the scenario expects of each rank.
enum class Expect {
  kError,           ///< a call fails with an error text, within the deadline
  kSuccess,         ///< every call succeeds with the right result
  kKilled,          ///< the victim: killed by SIGKILL
  kVictimAny,       ///< the victim of a non-fatal fault: anything but a crash or hang
  kSuccessOrError,  ///< right results, or an error within the deadline (never a wrong result)
};

struct Verdict {
  std::vector<Expect> ranks;
  double maxErrorS = 0;  ///< every error within this many seconds of its call's start
  double minErrorS = 0;  ///< and not before this (a timeout that must not come early)
  /// Every error of a rank expected to fail comes from a call whose failed_in starts with this
  /// ("allreduce #3"): a deadline run out earlier, in init say, is not the scenario.
  const char* failedIn = nullptr;
  const char* errorMentions = nullptr;  ///< every error text contains this (case-sensitive)
  /// At least one error text contains this: the first rank to fail names the cause, the ones
  /// waiting on it may see it leave instead.
  const char* someErrorMentions = nullptr;
};

/// Builds the table row of a run, records it, and asserts the verdict plus the suite's
/// invariants (no hang, no crash, no wrong result, nothing left in /dev/shm).
void judge(const std::string& scenario, Wire wire, const test::RunReport& report,
           const std::string& leftovers, const Verdict& verdict, const std::string& note = "");

}  // namespace braid::fault
