#include "fault/fault_run.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "braid/braid.h"

namespace braid::fault {
namespace {

// Scheduling noise on a small shared machine: 4 rank processes (plus proxies) on 2 cores.
constexpr double kSlackS = 3;

std::string value(const test::RankResult& r, const char* key) {
  auto it = r.values.find(key);
  return it == r.values.end() ? std::string() : it->second;
}

std::string fixed(double x, int digits) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.*f", digits, x);
  return buf;
}

// Keeps the start (the call) and the end (the cause: contexts are prefixed, the root cause comes
// last).
std::string shorten(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  const size_t head = max / 3, tail = max - head - 5;
  return text.substr(0, head) + " ... " + text.substr(text.size() - tail);
}

}  // namespace

const char* wireName(Wire wire) {
  return wire == Wire::kShm   ? "shm (processes)"
         : wire == Wire::kTcp ? "tcp (netns)"
                              : "net/UCX (netns)";
}

const char* wireTag(Wire wire) {
  return wire == Wire::kShm ? "shm" : wire == Wire::kTcp ? "tcp" : "net";
}

std::string wireUnavailableReason(Wire wire) {
  if (wire == Wire::kShm) return "";
#ifndef BRAID_FAULT_UCX_PLUGIN
  if (wire == Wire::kNet) return "the UCX net plugin is not built here (libucx-dev)";
#endif
  return test::namespacesUnavailableReason();
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const char* codeName(ncclResult_t r) {
  switch (r) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "unknown";
  }
}

bool isRankChild() {
  return test::isNamespaceChild();
}

test::RunReport runFaultRanks(Wire wire, int nranks, const test::RankFn& fn,
                              const FaultOptions& options) {
  std::vector<std::pair<std::string, std::string>> env = {
      {"BRAID_TIMEOUT_S", fixed(options.timeoutS, 3)},
      // Small slots: a large allreduce is thousands of steps, so a fault lands inside one.
      {"BRAID_SLOT_BYTES", "65536"},
  };
  if (wire == Wire::kShm) {
    env.push_back({"BRAID_TRANSPORTS", "shm"});
    env.push_back({"NCCL_SOCKET_IFNAME", "lo"});
  } else if (wire == Wire::kTcp) {
    env.push_back({"BRAID_TRANSPORTS", "tcp"});
  } else {
#ifdef BRAID_FAULT_UCX_PLUGIN
    env.push_back({"NCCL_NET_PLUGIN", BRAID_FAULT_UCX_PLUGIN});
#endif
    env.push_back({"NCCL_NET", "UCX"});
    env.push_back({"BRAID_TRANSPORTS", "net"});
    env.push_back({"UCX_TLS", "tcp"});
    env.push_back({"UCX_NET_DEVICES", "eth0"});
  }
  env.insert(env.end(), options.env.begin(), options.env.end());
  if (wire == Wire::kShm) {
    test::RunOptions o;
    o.env = env;
    o.timeoutS = options.limitS;
    // As under braidrun: every rank derives the id, rank 0 hosts the rendezvous, so killing
    // rank 0 also kills the bootstrap root.
    o.idFromEnvironment = true;
    o.env.push_back({"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(test::freeLocalPort())});
    o.env.push_back({"BRAID_COMM_SECRET", "0123456789abcdef0123456789abcdef"});
    return test::runProcesses(nranks, fn, o);
  }
  test::NamespaceOptions o;
  o.env = env;
  o.timeoutS = options.limitS;
  o.namespaces = 2;
  o.placement = test::Placement::kRoundRobin;
  o.duringRun = options.duringRun;
  o.beforeRun = options.beforeRun;
  return test::runInNamespaces(nranks, fn, o);
}

ncclResult_t checkedAllReduce(test::RankContext& ctx, ncclComm_t comm, size_t count, int salt) {
  std::vector<int32_t> in(count), out(count, static_cast<int32_t>(0xA5A5A5A5));
  for (size_t i = 0; i < count; i++)
    in[i] = (ctx.rank() + 1) * static_cast<int32_t>((i % 1000) + salt);
  ncclResult_t r = ncclAllReduce(in.data(), out.data(), count, ncclInt32, ncclSum, comm, nullptr);
  if (r != ncclSuccess) return r;
  const int32_t scale = ctx.nranks() * (ctx.nranks() + 1) / 2;
  for (size_t i = 0; i < count; i++) {
    int32_t expected = scale * static_cast<int32_t>((i % 1000) + salt);
    if (out[i] != expected) {
      ctx.fail("WRONG RESULT: salt " + std::to_string(salt) + " element " + std::to_string(i) +
               " of " + std::to_string(count) + ": " + std::to_string(out[i]) + ", expected " +
               std::to_string(expected));
      return r;
    }
  }
  return r;
}

void reportFailure(test::RankContext& ctx, const std::string& where, ncclResult_t result,
                   double seconds, const std::string& text) {
  ctx.report("failed_in", where);
  ctx.report("error_s", fixed(seconds, 3));
  ctx.report("code", codeName(result));
  ctx.report("error", text);
}

void checkFailedCommunicator(test::RankContext& ctx, ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async == ncclSuccess)
    ctx.fail("ncclCommGetAsyncError does not report the failure");
  int32_t x = 1;
  double start = now();
  if (ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, nullptr) == ncclSuccess)
    ctx.fail("an allreduce on the failed communicator succeeded");
  if (now() - start > 1) ctx.fail("an allreduce on the failed communicator waited");
  start = now();
  if (ncclCommAbort(comm) != ncclSuccess)
    ctx.fail(std::string("ncclCommAbort: ") + ncclGetLastError(nullptr));
  ctx.report("abort_s", fixed(now() - start, 3));
  if (now() - start > 2) ctx.fail("ncclCommAbort took " + fixed(now() - start, 2) + " s");
}

void reduceUntilFailure(test::RankContext& ctx, int first, size_t count, size_t laterCount,
                        double limitS, double laterTimeoutS) {
  double start = now();
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
  if (r != ncclSuccess) {
    reportFailure(ctx, "init", r, now() - start, ncclGetLastError(nullptr));
    if (comm) ctx.fail("a failed init returned a communicator");
    return;
  }
  const double until = now() + limitS;
  int done = 0;
  while (now() < until) {
    size_t n = done < first ? count : laterCount;
    if (done == first && laterTimeoutS > 0 &&
        braidCommSetTimeout(comm, laterTimeoutS) != ncclSuccess)
      ctx.fail(std::string("braidCommSetTimeout: ") + ncclGetLastError(comm));
    start = now();
    r = checkedAllReduce(ctx, comm, n, done);
    if (r != ncclSuccess) break;
    done++;
  }
  ctx.report("completed", std::to_string(done));
  if (r == ncclSuccess) {
    ctx.report("no_error", "1");
    ncclCommDestroy(comm);
    return;
  }
  reportFailure(ctx, "allreduce #" + std::to_string(done), r, now() - start,
                ncclGetLastError(comm));
  checkFailedCommunicator(ctx, comm);
}

std::set<std::string> braidShmEntries() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* e = readdir(dir))
      if (strncmp(e->d_name, "braid", 5) == 0) names.insert(e->d_name);
    closedir(dir);
  }
  return names;
}

std::string leftoverShm(const std::set<std::string>& before) {
  std::set<std::string> left;
  for (int attempt = 0; attempt < 10; attempt++) {
    left.clear();
    for (const std::string& name : braidShmEntries())
      if (!before.count(name)) left.insert(name);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::string list;
  for (const std::string& name : left) {
    list += (list.empty() ? "" : " ") + name;
    unlink(("/dev/shm/" + name).c_str());
  }
  return list;
}

void judge(const std::string& scenario, Wire wire, const test::RunReport& report,
           const std::string& leftovers, const Verdict& verdict, const std::string& note) {
  FaultRow row;
  row.scenario = scenario + (note.empty() ? "" : " (" + note + ")");
  row.wire = wireName(wire);
  row.leftovers = leftovers.empty() ? "none" : leftovers;
  double slowest = -1, firstErrorS = 1e300;
  std::vector<std::string> problems;
  if (!report.setupError.empty()) problems.push_back("setup: " + report.setupError);
  for (const test::RankResult& r : report.ranks) {
    const Expect expect =
        r.rank < static_cast<int>(verdict.ranks.size()) ? verdict.ranks[r.rank] : Expect::kError;
    std::string cellText;
    const std::string error = value(r, "error");
    const std::string who = "rank " + std::to_string(r.rank) + ": ";
    switch (r.outcome) {
      case test::Outcome::kSignaled:
        cellText = r.signal == SIGKILL && expect == Expect::kKilled
                       ? "killed (victim)"
                       : "CRASH: signal " + std::to_string(r.signal);
        if (cellText.rfind("CRASH", 0) == 0) problems.push_back(who + cellText);
        break;
      case test::Outcome::kTimedOut:
        cellText = "HANG";
        problems.push_back(who + "still running at the hard limit (hang)");
        break;
      case test::Outcome::kExited:
      case test::Outcome::kNoReport:
      case test::Outcome::kException:
        cellText = std::string("CRASH: ") + test::outcomeName(r.outcome);
        problems.push_back(who + cellText);
        break;
      case test::Outcome::kOk:
      case test::Outcome::kFailed: {
        if (!value(r, "stalled").empty()) {
          cellText = "stopped calling (victim)";
        } else if (!error.empty()) {
          double s = std::stod(value(r, "error_s"));
          slowest = std::max(slowest, s);
          cellText =
              value(r, "code") + " in " + value(r, "failed_in") + " after " + fixed(s, 2) + " s";
          // The first to fail is the one that saw the cause; the others may see it leave.
          if (expect != Expect::kSuccess && s < firstErrorS) {
            firstErrorS = s;
            row.error = shorten(error, 140);
          }
          if (expect == Expect::kSuccess) problems.push_back(who + "unexpected error: " + error);
          const bool mayFail = expect == Expect::kError || expect == Expect::kSuccessOrError;
          if (mayFail && verdict.maxErrorS > 0 && s > verdict.maxErrorS + kSlackS)
            problems.push_back(who + "error after " + fixed(s, 2) + " s, allowed " +
                               fixed(verdict.maxErrorS, 1) + " s: " + error);
          if (expect == Expect::kError && s < verdict.minErrorS)
            problems.push_back(who + "error already after " + fixed(s, 2) + " s: " + error);
          if (expect == Expect::kError && verdict.failedIn &&
              value(r, "failed_in").rfind(verdict.failedIn, 0) != 0)
            problems.push_back(who + "failed in " + value(r, "failed_in") + ", expected " +
                               verdict.failedIn + ": " + error);
          if (expect == Expect::kError && verdict.errorMentions &&
              error.find(verdict.errorMentions) == std::string::npos)
            problems.push_back(who + "error text does not mention \"" + verdict.errorMentions +
                               "\": " + error);
        } else {
          std::string done = value(r, "completed");
          cellText = "ok" + (done.empty() ? std::string() : ", " + done + " ops");
          if (expect == Expect::kError) problems.push_back(who + "no error although expected");
        }
        if (expect == Expect::kKilled) problems.push_back(who + "the victim was not killed");
        if (r.outcome == test::Outcome::kFailed) {
          cellText += " FAILED";
          for (const std::string& f : r.failures) problems.push_back(who + f);
        }
        break;
      }
    }
    row.ranks.push_back(cellText);
  }
  if (verdict.someErrorMentions) {
    bool named = false;
    for (const test::RankResult& r : report.ranks)
      named |= value(r, "error").find(verdict.someErrorMentions) != std::string::npos;
    if (!named)
      problems.push_back(std::string("no error text mentions \"") + verdict.someErrorMentions +
                         "\"");
  }
  row.timeToError = slowest < 0 ? "-" : fixed(slowest, 2) + " s";
  if (!leftovers.empty()) problems.push_back("left in /dev/shm: " + leftovers);
  row.passed = problems.empty();
  recordRow(row);
  std::string all;
  for (const std::string& p : problems) all += "\n  " + p;
  EXPECT_TRUE(problems.empty()) << scenario << " over " << wireName(wire) << ":" << all << "\n"
                                << report.describe();
}

}  // namespace braid::fault
