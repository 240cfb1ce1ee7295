#include "core/flight_recorder.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "util/log.h"

namespace braid {
namespace {

// Recorders of initialised communicators, for process-wide dumps. Never destroyed: the SIGUSR1
// thread may still be dumping while static destructors run at exit.
std::mutex& registryMutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::unordered_set<FlightRecorder*>& registry() {
  static auto* live = new std::unordered_set<FlightRecorder*>();
  return *live;
}

const char* stateName(OpState s) {
  switch (s) {
    case OpState::kQueued:
      return "queued";
    case OpState::kRunning:
      return "running";
    case OpState::kDone:
      return "done";
    case OpState::kFailed:
      return "FAILED";
    case OpState::kLaunched:
      return "launched";
  }
  return "?";
}

// The recorder's clock: the coarse monotonic clock costs a fifth of the precise one on virtual
// machines (about 20 ns against 100 ns per read, twice per operation) and its resolution (a
// jiffy, 1-4 ms) is ample for saying which operation hung and since when.
int64_t recorderNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t recorderResolutionNs() {
  static const int64_t res = [] {
    timespec ts{};
    clock_getres(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }();
  return res;
}

// "12.5 ms" / "3.20 s": durations the way a person reads a hang report ("< 4.0 ms" below the
// clock's resolution).
std::string duration(int64_t ns) {
  char buf[32];
  if (ns < 0) ns = 0;
  if (ns < recorderResolutionNs()) return "< " + duration(recorderResolutionNs());
  if (ns < 10000)
    snprintf(buf, sizeof(buf), "%lld ns", static_cast<long long>(ns));
  else if (ns < 10000000)
    snprintf(buf, sizeof(buf), "%.1f us", ns / 1e3);
  else if (ns < 10000000000ll)
    snprintf(buf, sizeof(buf), "%.1f ms", ns / 1e6);
  else
    snprintf(buf, sizeof(buf), "%.2f s", ns / 1e9);
  return buf;
}

void emit(bool force, const char* fmt, const char* a) {
  if (force || logEnabled(kLogWarn, kSubsysAll))
    logMessage(kLogWarn, kSubsysAll, __FILE__, __LINE__, fmt, a);
}

}  // namespace

FlightRecorder::~FlightRecorder() {
  if (!registered_) return;
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().erase(this);
}

void FlightRecorder::configure(size_t capacity, int rank, int nranks, uint64_t commHash,
                               const void* comm) {
  capacity_ = capacity;
  if (capacity_ > 0) ring_.reset(new Entry[capacity_]);
  nranks_ = nranks;
  peerSeq_.reset(new std::atomic<uint64_t>[nranks > 0 ? nranks : 1]);
  for (int i = 0; i < nranks; i++) peerSeq_[i].store(0);
  rank_ = rank;
  commHash_ = commHash;
  comm_ = comm;
  std::lock_guard<std::mutex> lock(registryMutex());
  registry().insert(this);
  registered_ = true;
}

FlightRecorder::Entry* FlightRecorder::entry(int64_t id) const {
  if (id <= 0 || capacity_ == 0) return nullptr;
  Entry* e = &ring_[static_cast<uint64_t>(id) % capacity_];
  // The ring may have wrapped past this operation (more than N queued at once).
  return e->id.load(std::memory_order_relaxed) == static_cast<uint64_t>(id) ? e : nullptr;
}

int64_t FlightRecorder::begin(uint64_t seq, const char* what, uint64_t bytes, const char* algorithm,
                              OpState state) {
  if (capacity_ == 0) return -1;
  const uint64_t id = next_.fetch_add(1, std::memory_order_relaxed);
  Entry& e = ring_[id % capacity_];
  const int64_t now = recorderNowNs();
  // Seqlock write: readers retry while the version is odd or changed under them.
  const uint64_t v = e.version.load(std::memory_order_relaxed);
  e.version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  e.id.store(id, std::memory_order_relaxed);
  e.seq.store(seq, std::memory_order_relaxed);
  e.what.store(what, std::memory_order_relaxed);
  e.algorithm.store(algorithm, std::memory_order_relaxed);
  e.bytes.store(bytes, std::memory_order_relaxed);
  e.queuedNs.store(now, std::memory_order_relaxed);
  e.startNs.store(state == OpState::kQueued ? 0 : now, std::memory_order_relaxed);
  e.endNs.store(0, std::memory_order_relaxed);
  e.state.store(static_cast<uint8_t>(state), std::memory_order_relaxed);
  e.version.store(v + 2, std::memory_order_release);
  return static_cast<int64_t>(id);
}

void FlightRecorder::setState(int64_t id, OpState state) {
  Entry* e = entry(id);
  if (!e) return;
  const int64_t now = recorderNowNs();
  const uint64_t v = e->version.load(std::memory_order_relaxed);
  e->version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  if (state == OpState::kRunning) e->startNs.store(now, std::memory_order_relaxed);
  if (state == OpState::kDone || state == OpState::kFailed)
    e->endNs.store(now, std::memory_order_relaxed);
  e->state.store(static_cast<uint8_t>(state), std::memory_order_relaxed);
  e->version.store(v + 2, std::memory_order_release);
}

void FlightRecorder::setAlgorithm(int64_t id, const char* algorithm) {
  if (Entry* e = entry(id)) e->algorithm.store(algorithm, std::memory_order_relaxed);
}

bool FlightRecorder::read(const Entry& e, Snapshot* out) const {
  for (int attempt = 0; attempt < 100; attempt++) {
    uint64_t v1 = e.version.load(std::memory_order_acquire);
    if (v1 & 1) continue;
    out->id = e.id.load(std::memory_order_relaxed);
    out->seq = e.seq.load(std::memory_order_relaxed);
    out->what = e.what.load(std::memory_order_relaxed);
    out->algorithm = e.algorithm.load(std::memory_order_relaxed);
    out->bytes = e.bytes.load(std::memory_order_relaxed);
    out->queuedNs = e.queuedNs.load(std::memory_order_relaxed);
    out->startNs = e.startNs.load(std::memory_order_relaxed);
    out->endNs = e.endNs.load(std::memory_order_relaxed);
    out->state = static_cast<OpState>(e.state.load(std::memory_order_relaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e.version.load(std::memory_order_relaxed) == v1) return out->id != 0;
  }
  return false;
}

std::string FlightRecorder::peerSummary(int limit) const {
  std::string s;
  int named = 0;
  for (int p = 0; p < nranks_; p++) {
    if (p == rank_) continue;
    if (named == limit) {
      s += ", ...";
      break;
    }
    if (!s.empty()) s += ", ";
    uint64_t seq = peerSeq(p);
    s += "rank " + std::to_string(p) +
         (seq ? " at #" + std::to_string(seq) : std::string(" no data received yet"));
    named++;
  }
  return s;
}

void FlightRecorder::dump(const char* reason, bool force) const {
  if (!force && !logEnabled(kLogWarn, kSubsysAll)) return;
  char head[512];
  char when[32] = "";
  time_t t = time(nullptr);
  struct tm tm;
  if (localtime_r(&t, &tm)) strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
  snprintf(head, sizeof(head),
           "flight recorder: comm %p (hash %llx) rank %d of %d, %s, at %s; last collective "
           "seen from peers: %s",
           comm_, static_cast<unsigned long long>(commHash_), rank_, nranks_, reason, when,
           nranks_ > 1 ? peerSummary().c_str() : "none (1 rank)");
  emit(force, "%s", head);
  if (capacity_ == 0) {
    emit(force, "%s", "flight recorder: disabled (BRAID_FLIGHT_RECORDER_SIZE=0)");
    return;
  }
  const int64_t now = recorderNowNs();
  // Entries carry their own ids, so one overwritten while we read is recognised and skipped.
  const uint64_t last = next_.load(std::memory_order_relaxed) - 1;
  const uint64_t first = last >= capacity_ ? last - capacity_ + 1 : 1;
  for (uint64_t id = first; id <= last && id > 0; id++) {
    Snapshot s;
    if (!read(ring_[id % capacity_], &s) || s.id != id) continue;
    char line[400];
    std::string timing;
    if (s.state == OpState::kQueued)
      timing = "queued " + duration(now - s.queuedNs) + " ago";
    else if (s.state == OpState::kLaunched)
      timing = "launched " + duration(now - s.startNs) + " ago, run by its stream";
    else if (s.endNs)
      timing =
          "took " + duration(s.endNs - s.startNs) + ", ended " + duration(now - s.endNs) + " ago";
    else
      timing = "started " + duration(now - s.startNs) + " ago, still running";
    // Point-to-point batches have no collective sequence number (seq 0).
    std::string seq = s.seq ? " #" + std::to_string(s.seq) : std::string();
    snprintf(line, sizeof(line), "flight recorder: rank %d op %llu: %s%s, %llu bytes, %s, %s, %s",
             rank_, static_cast<unsigned long long>(s.id), s.what ? s.what : "?", seq.c_str(),
             static_cast<unsigned long long>(s.bytes), s.algorithm ? s.algorithm : "-",
             stateName(s.state), timing.c_str());
    emit(force, "%s", line);
  }
}

void FlightRecorder::dumpOnFirstFailure(const std::string& error) {
  if (failureDumped_.exchange(true)) return;
  if (!logEnabled(kLogWarn, kSubsysAll)) return;
  BRAID_WARN("%s", error.c_str());
  dump("after the first failure");
}

void FlightRecorder::dumpAll(const char* reason, bool force) {
  std::lock_guard<std::mutex> lock(registryMutex());
  for (const FlightRecorder* r : registry()) r->dump(reason, force);
}

// --- SIGUSR1 ---------------------------------------------------------------------------------
namespace {

std::atomic<int> signalPipeWrite{-1};  // lock-free: read by the handler
struct sigaction previousAction;
pid_t installedIn = 0;
std::mutex installMutex;

void onSignal(int sig, siginfo_t* info, void* context) {
  // Async-signal-safe: one write(2) of one byte to a non-blocking pipe; the dump happens on the
  // reader thread, in ordinary context.
  const int savedErrno = errno;
  int fd = signalPipeWrite.load(std::memory_order_relaxed);
  if (fd >= 0) {
    char byte = 1;
    ssize_t ignored = write(fd, &byte, 1);
    (void)ignored;
  }
  errno = savedErrno;
  // A handler the application installed before keeps working (never SIG_DFL: it would exit).
  if (previousAction.sa_flags & SA_SIGINFO) {
    if (previousAction.sa_sigaction) previousAction.sa_sigaction(sig, info, context);
  } else if (previousAction.sa_handler != SIG_DFL && previousAction.sa_handler != SIG_IGN) {
    previousAction.sa_handler(sig);
  }
}

void dumpLoop(int readFd) {
  char buf[64];
  for (;;) {
    ssize_t n = read(readFd, buf, sizeof(buf));
    if (n > 0) {
      FlightRecorder::dumpAll("on SIGUSR1", true);
    } else if (n == 0 || errno != EINTR) {
      return;
    }
  }
}

// The child of a fork has no reader thread: drop the inherited pipe so its signals are not
// dumped by the parent; a communicator created in the child installs a fresh one.
void forgetPipeInChild() {
  int fd = signalPipeWrite.exchange(-1);
  if (fd >= 0) close(fd);
  installedIn = 0;
}

}  // namespace

void installSignalDump() {
  std::lock_guard<std::mutex> lock(installMutex);
  if (installedIn == getpid()) return;
  static bool atforkRegistered = false;
  if (!atforkRegistered) {
    pthread_atfork(nullptr, nullptr, forgetPipeInChild);
    atforkRegistered = true;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    BRAID_WARN("BRAID_SIGUSR1_DUMP: pipe failed (%s); no SIGUSR1 dumps", strerror(errno));
    return;
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);  // a burst of signals never blocks the handler
  std::thread(dumpLoop, fds[0]).detach();
  signalPipeWrite.store(fds[1]);
  struct sigaction sa = {};
  sa.sa_sigaction = onSignal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  struct sigaction old = {};
  sigaction(SIGUSR1, &sa, &old);
  if (old.sa_sigaction != onSignal) previousAction = old;
  installedIn = getpid();
  BRAID_INFO(kSubsysInit, "BRAID_SIGUSR1_DUMP: SIGUSR1 dumps every communicator's flight recorder");
}

}  // namespace braid
