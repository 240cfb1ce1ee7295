// Ranks as processes in separate network namespaces. The parent builds the topology and starts
// each rank as `ip netns exec <ns> <this binary> --gtest_filter=<current test>` with
// BRAID_HARNESS_NETNS_CHILD set; the child re-runs the same test body, and its runInNamespaces
// call with the matching index runs the one rank and exits. Results come back through an
// inherited pipe, output through a log file; the namespaces are deleted whatever happens.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include "harness/harness_internal.h"
#include "harness/netns_topology.h"

extern char** environ;

namespace braid::test {
namespace {

constexpr const char* kChildVar = "BRAID_HARNESS_NETNS_CHILD";
constexpr int kChildResultFd = 100;  // where the child finds its result pipe

struct ChildRole {
  int call = -1;
  int rank = -1;
  int nranks = 0;
};

bool childRole(ChildRole* role) {
  const char* v = getenv(kChildVar);
  if (!v) return false;
  return sscanf(v, "%d,%d,%d", &role->call, &role->rank, &role->nranks) == 3;
}

std::string currentTestName() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!info) return "";
  return std::string(info->test_suite_name()) + "." + info->name();
}

// The index of this runInNamespaces call within the current test, the same in parent and child.
int nextCallIndex() {
  static std::string test;
  static int index = 0;
  std::string now = currentTestName();
  if (now != test) {
    test = now;
    index = 0;
  }
  return index++;
}

std::string randomSecret() {
  std::random_device rd;
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", rd() & 0xff);
  return std::string(hex, 32);
}

std::string selfExe() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

// Variables a rank child must not inherit: sharding would filter its test out, and output
// files belong to the parent.
bool dropFromChild(const std::string& entry) {
  for (const char* name : {"GTEST_OUTPUT=", "GTEST_TOTAL_SHARDS=", "GTEST_SHARD_INDEX=",
                           "GTEST_SHARD_STATUS_FILE=", "XML_OUTPUT_FILE=", kChildVar})
    if (entry.rfind(name, 0) == 0) return true;
  return false;
}

// Sets NAME=value in an environment list, replacing an earlier NAME (getenv takes the first).
void setVariable(std::vector<std::string>* env, const std::string& name, const std::string& value) {
  const std::string prefix = name + "=";
  std::erase_if(*env, [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
  env->push_back(prefix + value);
}

class TopologyControl : public NetworkControl {
 public:
  explicit TopologyControl(internal::NamespaceTopology& t) : topology_(t) {}
  bool setConnected(int host, bool connected) override {
    std::string error;
    if (topology_.setConnected(host, connected, &error)) return true;
    fprintf(stderr, "rank harness: %s\n", error.c_str());
    return false;
  }
  bool runInHost(int host, const std::vector<std::string>& argv, std::string* output) override {
    if (host < 0 || host >= static_cast<int>(topology_.hosts().size())) {
      *output = "no host " + std::to_string(host);
      return false;
    }
    std::vector<std::string> full = {"ip", "netns", "exec", topology_.hosts()[host]};
    full.insert(full.end(), argv.begin(), argv.end());
    return internal::runCommand(full, output) == 0;
  }

 private:
  internal::NamespaceTopology& topology_;
};

RunReport childRun(const ChildRole& role, int call, const RankFn& fn) {
  if (call != role.call) {
    // Another rank run of this test: the parent runs it, this child only passes by.
    RunReport passBy;
    passBy.shape = RankShape::kNamespaces;
    passBy.ranks.resize(role.nranks);
    for (int r = 0; r < role.nranks; r++) {
      passBy.ranks[r].rank = r;
      passBy.ranks[r].outcome = Outcome::kOk;
    }
    return passBy;
  }
  ncclUniqueId id{};
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    RankResult result;
    result.outcome = Outcome::kFailed;
    result.failures.push_back(std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr));
    internal::writeAll(kChildResultFd, internal::encodeResult(result));
    _exit(0);
  }
  RankContext ctx(RankShape::kNamespaces, role.rank, role.nranks, id);
  internal::runChildRank(ctx, fn, kChildResultFd);
}

}  // namespace

bool isNamespaceChild() {
  ChildRole role;
  return childRole(&role);
}

std::string namespacesUnavailableReason() {
  static std::string reason = [] {
    if (geteuid() != 0) return std::string("network namespace tests need root");
    internal::NamespaceTopology probe;
    std::string error;
    if (!probe.create(1, &error)) return "cannot create network namespaces here: " + error;
    return std::string();
  }();
  return reason;
}

RunReport runInNamespaces(int nranks, const RankFn& fn, const NamespaceOptions& options) {
  const int call = nextCallIndex();
  ChildRole role;
  if (childRole(&role)) return childRun(role, call, fn);

  RunReport report;
  report.shape = RankShape::kNamespaces;
  const double start = internal::nowSeconds();
  internal::NamespaceTopology topology;
  std::string error;
  if (options.namespaces < 1 || !topology.create(options.namespaces, &error, options.interfaces)) {
    report.setupError = error.empty() ? "bad namespace count" : error;
    return report;
  }
  TopologyControl control(topology);
  if (options.beforeRun) options.beforeRun(control);
  const std::string exe = selfExe();
  const std::string filter = "--gtest_filter=" + currentTestName();
  const std::string commId =
      internal::NamespaceTopology::addressOf(0) + ":" + std::to_string(options.port);
  const std::string secret = randomSecret();

  std::vector<internal::ChildProcess> children;
  fflush(nullptr);
  const pid_t parent = getpid();
  for (int rank = 0; rank < nranks; rank++) {
    int host = options.placement == Placement::kRoundRobin ? rank % options.namespaces
                                                           : rank * options.namespaces / nranks;
    // Everything the child needs is built before fork: only exec-safe calls after it.
    std::vector<std::string> env;
    for (char** e = environ; *e; e++)
      if (!dropFromChild(*e)) env.push_back(*e);
    for (const auto& [k, v] : options.env) setVariable(&env, k, v);
    // The rendezvous and the interface are the topology's: they override the test's settings.
    setVariable(&env, "NCCL_COMM_ID", commId);
    setVariable(&env, "BRAID_COMM_SECRET", secret);
    setVariable(&env, "NCCL_SOCKET_IFNAME",
                internal::NamespaceTopology::interfaceList(options.interfaces));
    setVariable(&env, kChildVar,
                std::to_string(call) + "," + std::to_string(rank) + "," + std::to_string(nranks));
    std::vector<std::string> argv = {"ip", "netns", "exec", topology.hosts()[host], exe, filter};
    std::vector<char*> envp, args;
    for (std::string& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (std::string& s : argv) args.push_back(s.data());
    args.push_back(nullptr);

    char logPath[] = "/tmp/braid-harness-log-XXXXXX";
    int logFd = mkostemp(logPath, O_CLOEXEC);
    int fds[2];
    if (logFd < 0 || pipe2(fds, O_CLOEXEC) != 0) {
      report.setupError = std::string("log file or pipe: ") + strerror(errno);
      if (logFd >= 0) close(logFd), unlink(logPath);
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      internal::dieWithParent(parent);  // kept across exec: a killed test takes its ranks along
      dup2(fds[1], kChildResultFd);     // dup2 clears close-on-exec on the copy
      dup2(logFd, 1);
      dup2(logFd, 2);
      execvpe(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(fds[1]);
    close(logFd);
    if (pid < 0) {
      report.setupError = std::string("fork: ") + strerror(errno);
      close(fds[0]);
      unlink(logPath);
      break;
    }
    children.push_back(
        {rank, pid, fds[0], topology.hosts()[host] + " pid " + std::to_string(pid), logPath});
  }
  std::thread action;
  if (options.duringRun && !children.empty())
    action = std::thread([&] { options.duringRun(control); });
  double left = options.timeoutS - (internal::nowSeconds() - start);
  report.ranks = internal::waitForChildren(children, left > 0 ? left : 0);
  if (action.joinable()) action.join();
  topology.destroy();
  report.seconds = internal::nowSeconds() - start;
  return report;
}

}  // namespace braid::test
