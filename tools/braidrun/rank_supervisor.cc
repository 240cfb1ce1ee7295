#include "rank_supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "line_prefixer.h"

namespace braidrun {
namespace {

using Clock = std::chrono::steady_clock;

// Signals reach the poll loop through this pipe, so no work happens inside a handler.
int gSignalPipe[2] = {-1, -1};

void onSignal(int signo) {
  int savedErrno = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  ssize_t ignored = ::write(gSignalPipe[1], &byte, 1);
  (void)ignored;
  errno = savedErrno;
}

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

const char* kRankVariables[] = {
    "RANK",        "LOCAL_RANK",       "WORLD_SIZE",       "LOCAL_WORLD_SIZE",
    "GROUP_RANK",  "GROUP_WORLD_SIZE", "ROLE_RANK",        "ROLE_WORLD_SIZE",
    "MASTER_ADDR", "MASTER_PORT",      "BRAID_COMM_SECRET"};

void report(const std::string& message) {
  std::string line = "braidrun: " + message + "\n";
  writeAll(STDERR_FILENO, line.data(), line.size());
}

struct Rank {
  int index = 0;
  pid_t pid = -1;
  bool running = false;
  int outFd = -1;  // read ends of the tagging pipes, -1 when closed or not tagging
  int errFd = -1;
  std::unique_ptr<LinePrefixer> out;
  std::unique_ptr<LinePrefixer> err;
};

std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

std::string describeRank(const Rank& rank) {
  return "rank " + std::to_string(rank.index) + " (pid " + std::to_string(rank.pid) + ")";
}

std::string describeStatus(int status) {
  if (WIFSIGNALED(status)) {
    int signo = WTERMSIG(status);
    const char* name = strsignal(signo);
    return "killed by signal " + std::to_string(signo) + " (" + (name ? name : "unknown") + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int statusToExitCode(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

// The index-th CPU of those braidrun may run on (its own affinity mask), alone in *set; false
// when there are fewer CPUs than that.
bool rankCpu(int index, cpu_set_t* set) {
  cpu_set_t allowed;
  if (::sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == index) {
      CPU_ZERO(set);
      CPU_SET(cpu, set);
      return true;
    }
  }
  return false;
}

class Supervisor {
 public:
  Supervisor(const LaunchOptions& options, const Rendezvous& rendezvous, char** parentEnv)
      : options_(options), rendezvous_(rendezvous), parentEnv_(parentEnv) {}

  int run();

 private:
  bool installSignalHandlers();
  bool spawn(Rank& rank);
  void reapChildren();
  void onRankExit(Rank& rank, int status);
  void onStopSignal(int signo);
  void beginStop(int signo);
  void signalRunning(int signo);
  void readOutput(int* fd, LinePrefixer* prefixer);
  int pollTimeoutMs() const;
  int runningCount() const;
  bool pipesOpen() const;

  const LaunchOptions& options_;
  const Rendezvous& rendezvous_;
  char** parentEnv_;
  std::vector<Rank> ranks_;
  int exitCode_ = 0;
  bool stopping_ = false;
  bool killed_ = false;
  int stopSignal_ = 0;  // the signal sent to stop the ranks
  Clock::time_point start_;
  Clock::time_point killDeadline_;
  Clock::time_point drainDeadline_;
};

bool Supervisor::installSignalHandlers() {
  if (::pipe2(gSignalPipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signo : kForwardedSignals) sigaction(signo, &action, nullptr);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}

bool Supervisor::spawn(Rank& rank) {
  int outPipe[2] = {-1, -1};
  int errPipe[2] = {-1, -1};
  if (options_.tagOutput &&
      (::pipe2(outPipe, O_CLOEXEC) != 0 || ::pipe2(errPipe, O_CLOEXEC) != 0)) {
    report(std::string("cannot create output pipes: ") + std::strerror(errno));
    return false;
  }
  // Everything the child needs is built before fork: the child only calls async-signal-safe code.
  std::vector<std::string> env =
      rankEnvironment(parentEnv_, rendezvous_, rank.index, options_.nranks);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> command = options_.command;
  std::vector<char*> argv;
  for (std::string& arg : command) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::string execError = "braidrun: cannot run '" + command[0] + "': ";
  pid_t parent = ::getpid();
  cpu_set_t cpu;
  const bool bind = options_.bindToCore && rankCpu(rank.index, &cpu);

  pid_t pid = ::fork();
  if (pid < 0) {
    report(std::string("fork failed: ") + std::strerror(errno));
    return false;
  }
  if (pid == 0) {
    struct sigaction deflt {};
    deflt.sa_handler = SIG_DFL;
    for (int signo : kForwardedSignals) sigaction(signo, &deflt, nullptr);
    sigaction(SIGCHLD, &deflt, nullptr);
    sigaction(SIGPIPE, &deflt, nullptr);
    // Own process group: braidrun signals each rank's whole process tree, exactly once.
    ::setpgid(0, 0);
    // A rank must not outlive braidrun (e.g. when braidrun itself is SIGKILLed).
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    if (bind) ::sched_setaffinity(0, sizeof(cpu), &cpu);
    if (options_.tagOutput) {
      ::dup2(outPipe[1], STDOUT_FILENO);
      ::dup2(errPipe[1], STDERR_FILENO);
    }
    ::execvpe(argv[0], argv.data(), envp.data());
    const char* reason = std::strerror(errno);
    writeAll(STDERR_FILENO, execError.data(), execError.size());
    writeAll(STDERR_FILENO, reason, std::strlen(reason));
    writeAll(STDERR_FILENO, "\n", 1);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that no signal can race the child's own setpgid
  rank.pid = pid;
  rank.running = true;
  if (options_.tagOutput) {
    ::close(outPipe[1]);
    ::close(errPipe[1]);
    rank.outFd = outPipe[0];
    rank.errFd = errPipe[0];
    std::string prefix = "[rank" + std::to_string(rank.index) + "]: ";
    rank.out = std::make_unique<LinePrefixer>(prefix, STDOUT_FILENO);
    rank.err = std::make_unique<LinePrefixer>(prefix, STDERR_FILENO);
  }
  return true;
}

void Supervisor::signalRunning(int signo) {
  for (const Rank& rank : ranks_) {
    if (!rank.running) continue;
    if (::kill(-rank.pid, signo) != 0) ::kill(rank.pid, signo);
  }
}

void Supervisor::beginStop(int signo) {
  stopping_ = true;
  stopSignal_ = signo;
  killDeadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options_.gracePeriodSeconds));
  signalRunning(signo);
}

void Supervisor::onRankExit(Rank& rank, int status) {
  rank.running = false;
  bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (!failed) return;
  if (stopping_) {
    // Deaths from the signals braidrun sent are the expected end; anything else is worth a line.
    bool ourSignal = WIFSIGNALED(status) &&
                     (WTERMSIG(status) == stopSignal_ || (killed_ && WTERMSIG(status) == SIGKILL));
    if (!ourSignal) report(describeRank(rank) + " " + describeStatus(status) + " while stopping");
    return;
  }
  report(describeRank(rank) + " " + describeStatus(status));
  exitCode_ = statusToExitCode(status);
  if (exitCode_ == 0) exitCode_ = 1;
  if (runningCount() > 0) {
    report("stopping the other ranks (SIGTERM, then SIGKILL after " +
           formatSeconds(options_.gracePeriodSeconds) + " s)");
  }
  beginStop(SIGTERM);
}

void Supervisor::reapChildren() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (Rank& rank : ranks_) {
      if (rank.pid == pid && rank.running) onRankExit(rank, status);
    }
  }
}

void Supervisor::onStopSignal(int signo) {
  const char* name = strsignal(signo);
  if (stopping_) {
    report(std::string("received ") + (name ? name : "signal") + " again; killing all ranks");
    signalRunning(SIGKILL);
    killed_ = true;
    return;
  }
  report(std::string("received signal ") + std::to_string(signo) + " (" + (name ? name : "?") +
         "); forwarding it to the ranks");
  if (exitCode_ == 0) exitCode_ = 128 + signo;
  beginStop(signo);
}

void Supervisor::readOutput(int* fd, LinePrefixer* prefixer) {
  char buffer[65536];
  ssize_t got = ::read(*fd, buffer, sizeof(buffer));
  if (got > 0) {
    prefixer->append(buffer, static_cast<std::size_t>(got));
    return;
  }
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  prefixer->flush();
  ::close(*fd);
  *fd = -1;
}

int Supervisor::runningCount() const {
  return static_cast<int>(
      std::count_if(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running; }));
}

bool Supervisor::pipesOpen() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const Rank& r) { return r.outFd >= 0 || r.errFd >= 0; });
}

int Supervisor::pollTimeoutMs() const {
  auto now = Clock::now();
  Clock::time_point next = Clock::time_point::max();
  if (options_.timeoutSeconds > 0 && !stopping_) {
    next = start_ + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(options_.timeoutSeconds));
  }
  if (stopping_ && !killed_) next = std::min(next, killDeadline_);
  if (runningCount() == 0) next = std::min(next, drainDeadline_);
  if (next == Clock::time_point::max()) return -1;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, 60000));
}

int Supervisor::run() {
  if (!installSignalHandlers()) {
    report(std::string("cannot create the signal pipe: ") + std::strerror(errno));
    return 1;
  }
  start_ = Clock::now();
  ranks_.resize(static_cast<std::size_t>(options_.nranks));
  for (int i = 0; i < options_.nranks; ++i) {
    ranks_[i].index = i;
    if (!spawn(ranks_[i])) {
      exitCode_ = 1;
      beginStop(SIGTERM);
      break;
    }
  }
  bool allExitedBefore = false;
  while (runningCount() > 0 || pipesOpen()) {
    if (runningCount() == 0 && !allExitedBefore) {
      // A rank's own children may keep its output pipe open; wait for them only briefly.
      allExitedBefore = true;
      drainDeadline_ = Clock::now() + std::chrono::seconds(1);
    }
    std::vector<pollfd> fds;
    fds.push_back({gSignalPipe[0], POLLIN, 0});
    for (const Rank& rank : ranks_) {
      if (rank.outFd >= 0) fds.push_back({rank.outFd, POLLIN, 0});
      if (rank.errFd >= 0) fds.push_back({rank.errFd, POLLIN, 0});
    }
    int ready = ::poll(fds.data(), fds.size(), pollTimeoutMs());
    if (ready < 0 && errno != EINTR) {
      report(std::string("poll failed: ") + std::strerror(errno));
      signalRunning(SIGKILL);
      return 1;
    }
    if (fds[0].revents & POLLIN) {
      unsigned char signals[64];
      ssize_t got;
      while ((got = ::read(gSignalPipe[0], signals, sizeof(signals))) > 0) {
        for (ssize_t i = 0; i < got; ++i) {
          if (signals[i] == SIGCHLD) continue;  // reaped below in every round
          onStopSignal(signals[i]);
        }
      }
    }
    for (Rank& rank : ranks_) {
      for (const pollfd& entry : fds) {
        if (entry.revents == 0) continue;
        if (entry.fd == rank.outFd && rank.outFd >= 0) readOutput(&rank.outFd, rank.out.get());
        if (entry.fd == rank.errFd && rank.errFd >= 0) readOutput(&rank.errFd, rank.err.get());
      }
    }
    reapChildren();

    auto now = Clock::now();
    if (!stopping_ && options_.timeoutSeconds > 0 &&
        now - start_ >= std::chrono::duration<double>(options_.timeoutSeconds)) {
      std::string still;
      for (const Rank& rank : ranks_) {
        if (rank.running) still += (still.empty() ? "" : ", ") + describeRank(rank);
      }
      report("timeout after " + formatSeconds(options_.timeoutSeconds) +
             " s; still running: " + still);
      exitCode_ = 124;
      beginStop(SIGTERM);
    }
    if (stopping_ && !killed_ && now >= killDeadline_ && runningCount() > 0) {
      for (const Rank& rank : ranks_) {
        if (rank.running)
          report(describeRank(rank) + " did not stop after SIGTERM; sending SIGKILL");
      }
      signalRunning(SIGKILL);
      killed_ = true;
    }
    if (runningCount() == 0 && allExitedBefore && now >= drainDeadline_) break;
  }
  for (Rank& rank : ranks_) {
    if (rank.out) rank.out->flush();
    if (rank.err) rank.err->flush();
  }
  return exitCode_;
}

}  // namespace

std::vector<std::string> rankEnvironment(char** parentEnv, const Rendezvous& rendezvous, int rank,
                                         int nranks) {
  std::vector<std::string> env;
  for (char** entry = parentEnv; entry && *entry; ++entry) {
    std::string_view text(*entry);
    std::string_view name = text.substr(0, text.find('='));
    bool ours = std::any_of(std::begin(kRankVariables), std::end(kRankVariables),
                            [&](const char* variable) { return name == variable; });
    if (!ours) env.emplace_back(text);
  }
  auto set = [&](const char* name, const std::string& value) {
    env.push_back(std::string(name) + "=" + value);
  };
  set("RANK", std::to_string(rank));
  set("LOCAL_RANK", std::to_string(rank));
  set("WORLD_SIZE", std::to_string(nranks));
  set("LOCAL_WORLD_SIZE", std::to_string(nranks));
  set("GROUP_RANK", "0");
  set("GROUP_WORLD_SIZE", "1");
  set("ROLE_RANK", std::to_string(rank));
  set("ROLE_WORLD_SIZE", std::to_string(nranks));
  set("MASTER_ADDR", rendezvous.masterAddr);
  set("MASTER_PORT", std::to_string(rendezvous.masterPort));
  set("BRAID_COMM_SECRET", rendezvous.secret);
  return env;
}

int superviseRanks(const LaunchOptions& options, const Rendezvous& rendezvous, char** parentEnv) {
  cpu_set_t cpu;
  if (options.bindToCore && !rankCpu(options.nranks - 1, &cpu)) {
    std::fprintf(stderr,
                 "braidrun: --bind-to core needs a CPU per rank: %d ranks, fewer CPUs allowed\n",
                 options.nranks);
    return 2;
  }
  Supervisor supervisor(options, rendezvous, parentEnv);
  return supervisor.run();
}

}  // namespace braidrun
