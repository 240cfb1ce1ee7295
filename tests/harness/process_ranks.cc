// Ranks as forked processes. The parent makes the unique id (so its bootstrap root runs in the
// parent, as a launcher's would), forks one child per rank, and reads each child's result from a
// pipe. Children that outlive the deadline are killed; a child that dies is reported with its
// exit code or signal, which tests of failure handling rely on.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "harness/harness_internal.h"

namespace braid::test {
namespace internal {

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool writeAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void dieWithParent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(125);  // the parent died before prctl took effect
}

void runChildRank(RankContext& ctx, const RankFn& fn, int fd) {
  RankResult result;
  {
    FailureCapture capture;
    result = runRankBody(ctx, fn);
  }
  fflush(nullptr);
  writeAll(fd, encodeResult(result));
  close(fd);
  // _exit: the parent's copy of GoogleTest and of every static object must not run here.
  _exit(0);
}

namespace {

std::string readTail(const std::string& path, size_t maxBytes) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string all = ss.str();
  if (all.size() > maxBytes) all = "...\n" + all.substr(all.size() - maxBytes);
  return all;
}

struct ChildState {
  std::string data;
  bool eof = false;
  bool reaped = false;
  int status = 0;
  bool killed = false;
};

}  // namespace

std::vector<RankResult> waitForChildren(std::vector<ChildProcess>& children, double timeoutS) {
  const double deadline = nowSeconds() + timeoutS;
  std::vector<ChildState> state(children.size());
  auto allDone = [&] {
    for (const ChildState& s : state)
      if (!s.eof || !s.reaped) return false;
    return true;
  };
  while (!allDone()) {
    double left = deadline - nowSeconds();
    if (left <= 0) break;
    std::vector<pollfd> fds;
    std::vector<size_t> owner;
    for (size_t i = 0; i < children.size(); i++) {
      if (state[i].eof) continue;
      fds.push_back({children[i].readFd, POLLIN, 0});
      owner.push_back(i);
    }
    int waitMs = static_cast<int>(std::min(left, 0.05) * 1000) + 1;
    if (!fds.empty() && poll(fds.data(), fds.size(), waitMs) < 0 && errno != EINTR) break;
    if (fds.empty()) usleep(waitMs * 1000);
    for (size_t k = 0; k < fds.size(); k++) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = read(fds[k].fd, buf, sizeof(buf));
      if (n > 0)
        state[owner[k]].data.append(buf, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR)
        state[owner[k]].eof = true;
    }
    for (size_t i = 0; i < children.size(); i++) {
      if (state[i].reaped) continue;
      pid_t got = waitpid(children[i].pid, &state[i].status, WNOHANG);
      if (got == children[i].pid) state[i].reaped = true;
    }
  }
  // Deadline: kill whoever is left, then collect what they managed to send.
  for (size_t i = 0; i < children.size(); i++) {
    if (state[i].reaped) continue;
    kill(children[i].pid, SIGKILL);
    state[i].killed = true;
    waitpid(children[i].pid, &state[i].status, 0);
    state[i].reaped = true;
  }
  std::vector<RankResult> results(children.size());
  for (size_t i = 0; i < children.size(); i++) {
    if (!state[i].eof) {
      // Non-blocking drain: a killed child's pipe may still hold a partial report.
      fcntl(children[i].readFd, F_SETFL, O_NONBLOCK);
      char buf[65536];
      for (ssize_t n; (n = read(children[i].readFd, buf, sizeof(buf))) > 0;)
        state[i].data.append(buf, static_cast<size_t>(n));
    }
    close(children[i].readFd);
    children[i].readFd = -1;
    RankResult& r = results[i];
    r.rank = children[i].rank;
    r.where = children[i].where;
    bool complete = decodeResult(state[i].data, &r);
    const int status = state[i].status;
    if (state[i].killed) {
      r.outcome = Outcome::kTimedOut;
      r.failures.push_back("still running at the " + std::to_string(timeoutS) +
                           " s deadline: killed");
    } else if (!complete) {
      if (WIFSIGNALED(status)) {
        r.outcome = Outcome::kSignaled;
        r.signal = WTERMSIG(status);
      } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        r.outcome = Outcome::kExited;
        r.exitCode = WEXITSTATUS(status);
      } else {
        r.outcome = Outcome::kNoReport;
      }
    } else if (WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0)) {
      r.failures.push_back("reported, then ended with status " + std::to_string(status));
      if (r.outcome == Outcome::kOk) r.outcome = Outcome::kFailed;
    }
    if (!children[i].logPath.empty()) {
      r.log = readTail(children[i].logPath, 6000);
      unlink(children[i].logPath.c_str());
    }
  }
  return results;
}

}  // namespace internal

int freeLocalPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

RunReport runProcesses(int nranks, const RankFn& fn, const RunOptions& options) {
  RunReport report;
  report.shape = RankShape::kProcesses;
  const double start = internal::nowSeconds();
  std::vector<internal::ChildProcess> children;
  {
    // Children inherit the environment at fork; the parent's own is restored right after.
    internal::ScopedEnv env(options.env);
    ncclUniqueId id = options.id.value_or(ncclUniqueId{});
    if (!options.idFromEnvironment && !options.id && ncclGetUniqueId(&id) != ncclSuccess) {
      report.setupError = std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr);
      return report;
    }
    fflush(nullptr);  // or buffered output would be written once more by every child
    const pid_t parent = getpid();
    for (int rank = 0; rank < nranks; rank++) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) != 0) {
        report.setupError = std::string("pipe: ") + strerror(errno);
        break;
      }
      pid_t pid = fork();
      if (pid < 0) {
        report.setupError = std::string("fork: ") + strerror(errno);
        close(fds[0]);
        close(fds[1]);
        break;
      }
      if (pid == 0) {
        internal::dieWithParent(parent);
        close(fds[0]);
        for (const internal::ChildProcess& c : children) close(c.readFd);
        if (options.idFromEnvironment && ncclGetUniqueId(&id) != ncclSuccess) {
          RankResult result;
          result.outcome = Outcome::kFailed;
          result.failures.push_back(std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr));
          internal::writeAll(fds[1], internal::encodeResult(result));
          _exit(0);
        }
        RankContext ctx(RankShape::kProcesses, rank, nranks, id);
        internal::runChildRank(ctx, fn, fds[1]);
      }
      close(fds[1]);
      children.push_back({rank, pid, fds[0], "pid " + std::to_string(pid), ""});
    }
  }
  double left = options.timeoutS - (internal::nowSeconds() - start);
  report.ranks = internal::waitForChildren(children, left > 0 ? left : 0);
  report.seconds = internal::nowSeconds() - start;
  return report;
}

}  // namespace braid::test
