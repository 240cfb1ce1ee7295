// Runs one test function on N ranks of a communicator, in one of three shapes:
//   - threads of this process (one ncclUniqueId, N threads),
//   - forked processes (fork after ncclGetUniqueId; results come back through a pipe; a hard
//     timeout kills stragglers),
//   - processes in 2-3 fresh network namespaces joined by a bridge (TCP between them), started as
//     `ip netns exec <ns> <this test binary> --gtest_filter=<this test>` in a child mode.
// Every rank's outcome is collected (checks that failed, exceptions, exit codes, signals,
// timeouts) so a test can assert on all of them, including ranks that are meant to die.
//
// Inside a rank function, GoogleTest assertions work in every shape: in child processes they are
// captured and sent back to the parent. A rank can also record failures and values explicitly.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nccl.h"

namespace braid::test {

enum class RankShape { kThreads, kProcesses, kNamespaces };
const char* shapeName(RankShape shape);

/// What a rank function gets: who it is and the id of the communicator to create.
class RankContext {
 public:
  RankContext(RankShape shape, int rank, int nranks, const ncclUniqueId& id)
      : shape_(shape), rank_(rank), nranks_(nranks), id_(id) {}

  RankShape shape() const { return shape_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  const ncclUniqueId& id() const { return id_; }

  /// ncclCommInitRank for this rank; records a failure (with ncclGetLastError's text) and
  /// returns nullptr when it fails.
  ncclComm_t initComm();

  /// Records a failure; the run's report marks this rank failed.
  void fail(const std::string& what);
  /// Sends a value back to the test (e.g. an output digest or a measured time).
  void report(const std::string& key, const std::string& value);

  const std::vector<std::string>& failures() const { return failures_; }
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  RankShape shape_;
  int rank_;
  int nranks_;
  ncclUniqueId id_;
  std::vector<std::string> failures_;
  std::map<std::string, std::string> values_;
};

using RankFn = std::function<void(RankContext&)>;

/// How a rank ended.
enum class Outcome {
  kOk,         ///< returned and recorded no failure
  kFailed,     ///< returned with failures (explicit or GoogleTest assertions)
  kException,  ///< threw
  kExited,     ///< (processes) exited without reporting, exitCode says how
  kSignaled,   ///< (processes) killed by signal `signal`
  kTimedOut,   ///< still running at the deadline (processes are killed)
  kNoReport,   ///< (processes) exited 0 but sent no report
};
const char* outcomeName(Outcome o);

struct RankResult {
  int rank = -1;
  Outcome outcome = Outcome::kNoReport;
  int exitCode = 0;
  int signal = 0;
  std::vector<std::string> failures;  ///< includes the exception text for kException
  std::map<std::string, std::string> values;
  std::string where;  ///< thread, pid or namespace, for messages
  std::string log;    ///< (namespaces) tail of the rank's stdout/stderr
};

struct RunReport {
  RankShape shape = RankShape::kThreads;
  std::vector<RankResult> ranks;
  double seconds = 0;
  std::string setupError;  ///< non-empty when the ranks could not even be started

  bool ok() const;
  /// Every rank's outcome and failures, for assertion messages.
  std::string describe() const;
  /// The value `key` of every rank (empty string where a rank did not report it).
  std::vector<std::string> valuesOf(const std::string& key) const;
};

struct RunOptions {
  /// Hard limit for the whole run. Processes still running are killed at the deadline; threads
  /// cannot be killed, so a thread run that overstays by a further grace period ends the test
  /// process with the report on stderr.
  double timeoutS = 120;
  /// Environment for the ranks (and for ncclGetUniqueId): threads set it process-wide for the
  /// duration of the run and restore it afterwards; processes set it in the child only.
  std::vector<std::pair<std::string, std::string>> env;
  /// Every rank calls ncclGetUniqueId itself (NCCL_COMM_ID / MASTER_ADDR in `env`, rank 0 hosts
  /// the rendezvous) instead of the harness calling it once before starting the ranks.
  bool idFromEnvironment = false;
  /// Use this id (made by the test) instead of calling ncclGetUniqueId.
  std::optional<ncclUniqueId> id;
};

enum class Placement {
  kRoundRobin,  ///< rank r in namespace r % n: every ring neighbour is on another "host"
  kBlocks,      ///< contiguous blocks of ranks per namespace: shm inside, TCP between
};

/// What a test may do to the network while namespace ranks run (from the parent).
class NetworkControl {
 public:
  virtual ~NetworkControl() = default;
  /// Plugs namespace `host` into the bridge or pulls it out (its eth0 loses carrier).
  virtual bool setConnected(int host, bool connected) = 0;
  /// Runs a program (no shell) inside namespace `host`, e.g. `tc qdisc add dev eth0 ...` to
  /// impair its link; false when it could not run or exited non-zero (its output in *output).
  virtual bool runInHost(int host, const std::vector<std::string>& argv, std::string* output) {
    (void)host, (void)argv;
    *output = "not supported";
    return false;
  }
};

struct NamespaceOptions : RunOptions {
  int namespaces = 2;  ///< 2 or 3 (one /24 behind one bridge, 10.213.0.(i+1))
  Placement placement = Placement::kRoundRobin;
  int port = 29517;  ///< rank 0's rendezvous port (fresh namespaces: always free)
  /// Interfaces per host (1 or 2: eth0 on 10.213.0.0/24, eth1 on 10.213.1.0/24, each on a
  /// bridge of its own); NCCL_SOCKET_IFNAME names them all.
  int interfaces = 1;
  /// Runs on a parent thread once the ranks have started (e.g. to cut a link mid-run); the run
  /// ends when it has returned and every rank has ended.
  std::function<void(NetworkControl&)> duringRun;
  /// Runs in the parent after the namespaces exist and before any rank starts.
  std::function<void(NetworkControl&)> beforeRun;
};

RunReport runThreads(int nranks, const RankFn& fn, const RunOptions& options = {});
RunReport runProcesses(int nranks, const RankFn& fn, const RunOptions& options = {});
/// In the parent: creates the namespaces, runs the ranks, deletes the namespaces. In a rank
/// child (started by the parent), runs only this rank for the matching call and exits.
RunReport runInNamespaces(int nranks, const RankFn& fn, const NamespaceOptions& options = {});

/// A TCP port on 127.0.0.1 that was free a moment ago (for NCCL_COMM_ID in tests).
int freeLocalPort();

/// Empty when network namespaces can be created here; otherwise why not (for GTEST_SKIP).
std::string namespacesUnavailableReason();
/// True in a process started by runInNamespaces to be one rank.
bool isNamespaceChild();

}  // namespace braid::test

/// Fails the current test (with every rank's story) unless all ranks succeeded.
#define BRAID_EXPECT_ALL_RANKS_OK(report) EXPECT_TRUE((report).ok()) << (report).describe()
#define BRAID_ASSERT_ALL_RANKS_OK(report) ASSERT_TRUE((report).ok()) << (report).describe()

/// Skips the current test when network namespaces cannot be made (in a rank child: never).
#define BRAID_SKIP_WITHOUT_NAMESPACES()                                               \
  do {                                                                                \
    if (!::braid::test::isNamespaceChild()) {                                         \
      std::string braid_netns_reason_ = ::braid::test::namespacesUnavailableReason(); \
      if (!braid_netns_reason_.empty()) GTEST_SKIP() << braid_netns_reason_;          \
    }                                                                                 \
  } while (0)
