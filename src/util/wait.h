// Waiting that follows the machine as it is now and always ends. A wait spins only while
// spinning can pay: never when the peer it waits for last ran on this very core (it needs this
// core to answer), and for a budget that grows while spins end in an answer and shrinks while
// they do not (the peer is not running: another process took its core). Then it yields, then
// sleeps on a futex in short slices, checking the abort flag, the deadline and the peer's
// liveness each slice.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include <sched.h>
#include "nccl.h"

#include "util/clock.h"
#include "util/futex.h"

namespace braid {

/// Something that can tell whether the other side of a wait is still alive.
class LivenessCheck {
 public:
  virtual ~LivenessCheck() = default;
  /// ncclSuccess while alive; otherwise records the reason and returns the error.
  virtual ncclResult_t check() = 0;
  /// Cuts the connection so its far end (a proxy thread) can no longer touch memory this rank
  /// lent it (fifo.h: FifoSender::postLent), once a wait for that memory's release failed.
  virtual void sever() {}
  /// The peer's rank, named when a wait on it times out; -1 where unknown.
  virtual int peerRank() const { return -1; }
};

struct WakeWord;

/// A wait that sleeps on something other than a futex word: a connection whose waiting thread
/// moves the data itself (a TCP receive pumped by the caller) sleeps until its socket is
/// readable instead, since no other thread will ever wake the word.
class WaitSleeper {
 public:
  virtual ~WaitSleeper() = default;
  /// Sleeps until there may be something to take, or for at most `ns`.
  virtual void sleepFor(int64_t ns) = 0;
  /// True when the sender last ran on this thread's core (peerOnThisCore), where that can be
  /// told: it cannot answer until this thread gives the core up.
  virtual bool senderOnThisCore() { return false; }
};

/// The core this thread runs on now (the kernel keeps it where the thread can read it: a few
/// nanoseconds); kUnknownCpu where it cannot be told.
constexpr uint32_t kUnknownCpu = 0xffffffffu;
inline uint32_t currentCpu() {
  const int cpu = sched_getcpu();
  return cpu < 0 ? kUnknownCpu : static_cast<uint32_t>(cpu);
}
/// The longest a wait on a socket (WakeWord::sleeper) spins, whatever its budget: a loopback
/// answer takes about 10 us; beyond that the peer is not running, most likely because it needs
/// this rank's core (a co-runner holds the other), and spinning only delays it. Measured over
/// loopback TCP at 2 ranks beside one busy thread: 8 B in 41 us with this cap, 1.0-1.4 ms
/// without (the budget's 20000 polls), unchanged on idle cores.
constexpr int64_t kSleeperSpinNs = 20000;
/// Polls a budget never shrinks below: about two microseconds, as long as a running peer takes
/// to answer a small message, so a budget that shrank while the peer was away grows back as
/// soon as it runs again.
constexpr int kMinSpinPolls = 64;

/// Consulted while a wait is stalled (every ~20 ms of sleeping), to tell a slow peer from a peer
/// that is in another call: an error ends the wait. `waitingOn` is the word the wait sleeps on
/// (a FIFO's head or tail), which tells the observer whom it waits for.
class StallObserver {
 public:
  virtual ~StallObserver() = default;
  virtual ncclResult_t onStall(const WakeWord& waitingOn) = 0;
};

/// Work every wait of a communicator does before each sleep slice, whatever it waits for: the
/// team pulls its TCP receives (core/team.h), so data keeps leaving a peer's socket while this
/// rank waits on another connection.
class WaitProgress {
 public:
  virtual ~WaitProgress() = default;
  virtual void progress() = 0;
};

/// How a communicator waits: its spin budget, deadline and abort flag.
struct WaitPolicy {
  int spinIters = 2000;                          ///< most polls before the first sleep
  double timeoutS = 300;                         ///< BRAID_TIMEOUT_S
  const std::atomic<uint32_t>* abort = nullptr;  ///< non-zero: give up now
  /// The spin budget in force: halved whenever spinning did not pay (the peer was not running,
  /// e.g. another process took its core), down to kMinSpinPolls, doubled back towards spinIters
  /// whenever it did. Only the thread that owns the policy's communicator waits with it.
  mutable int spinNow = -1;
  /// A wait on sockets whose sender is on this thread's core sleeps at once instead of yielding
  /// first: its wake-up then puts it on a free core. For hosts with a core for every rank; where
  /// ranks outnumber cores no core is free, and a yield hands the peer the core sooner.
  bool sleepWhenPeerHere = false;
  StallObserver* stall = nullptr;    ///< the running operation's mismatch watch, if any
  WaitProgress* progress = nullptr;  ///< done before each sleep slice (WaitProgress)
  /// Waits that found nothing ready, and those of them that spinning did not end (the peer was
  /// on this core or not running): how contended the cores are now, as the tuner reads it.
  mutable uint64_t waits = 0;
  mutable uint64_t unspun = 0;

  /// Polls a wait may spend before it sleeps.
  int spinBudget() const { return spinNow >= 0 ? spinNow : spinIters; }
  /// The peer answered while this rank spun or yielded: grow the budget back towards spinIters.
  void spinPaid() const { spinNow = std::min(spinIters, spinBudget() * 2 + 16); }
  /// A spin of `budget` polls ended without the peer: halve it, never below kMinSpinPolls (nor
  /// above spinIters).
  void spinFailed(int budget) const {
    spinNow = std::min(spinIters, std::max(kMinSpinPolls, budget / 2));
  }
};

/// The word a waiter sleeps on and the count of sleepers the other side checks before waking;
/// `peerCpu` (if set) is where the other side last ran (currentCpu(), stored as it publishes).
struct WakeWord {
  std::atomic<uint32_t>* word;
  std::atomic<uint32_t>* sleepers;
  const std::atomic<uint32_t>* peerCpu = nullptr;
  /// Set where nobody wakes `word`: waits sleep through it instead (WaitSleeper).
  WaitSleeper* sleeper = nullptr;
};

/// True when the other side of `w` last ran on this thread's core: it cannot answer until this
/// thread gives the core up, so spinning only delays it.
inline bool peerOnThisCore(const WakeWord& w) {
  if (w.sleeper) return w.sleeper->senderOnThisCore();
  if (!w.peerCpu) return false;
  const uint32_t theirs = w.peerCpu->load(std::memory_order_relaxed);
  return theirs != kUnknownCpu && theirs == currentCpu();
}

/// Publisher side: after changing *w.word (seq_cst), wake sleepers if any.
inline void notify(const WakeWord& w) {
  if (w.sleepers->load(std::memory_order_seq_cst) != 0) futexWakeAll(w.word);
}

namespace detail {
ncclResult_t waitSlow(const WaitPolicy& policy, const WakeWord& w, bool (*ready)(const void*),
                      const void* readyArg, LivenessCheck* peer, const char* what, bool peerHere);
}

/// Returns once ready() holds, or an error (abort, timeout, dead peer) naming `what`.
template <class Ready>
inline ncclResult_t waitUntil(const WaitPolicy& policy, const WakeWord& w, const Ready& ready,
                              LivenessCheck* peer, const char* what) {
  if (ready()) return ncclSuccess;
  policy.waits++;
  const bool peerHere = peerOnThisCore(w);
  if (!peerHere) {
    const int budget = policy.spinBudget();
    const int64_t spinEnd = w.sleeper ? nowNs() + kSleeperSpinNs : 0;
    for (int i = 0; i < budget; i++) {
      cpuRelax();
      if (w.sleeper && (i & 31) == 31 && nowNs() > spinEnd) break;
      if (ready()) {
        if (budget < policy.spinIters) policy.spinPaid();
        return ncclSuccess;
      }
    }
    policy.spinFailed(budget);
  }
  policy.unspun++;
  return detail::waitSlow(
      policy, w, [](const void* r) { return (*static_cast<const Ready*>(r))(); }, &ready, peer,
      what, peerHere);
}

}  // namespace braid
