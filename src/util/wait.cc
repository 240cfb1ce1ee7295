#include "util/wait.h"

#include <sched.h>

#include "util/clock.h"
#include "util/status.h"

namespace braid::detail {

ncclResult_t waitSlow(const WaitPolicy& policy, const WakeWord& w, bool (*ready)(const void*),
                      const void* readyArg, LivenessCheck* peer, const char* what, bool peerHere) {
  // A few yields first: on an oversubscribed core the peer may only need our time slice. An
  // answer within them says the peer was running after all, unless it ran on this core.
  // Not for a wait on sockets whose sender is on this very core while a core is free for each
  // rank (sleepWhenPeerHere): a yield keeps the two ranks on one core, exchanging it call after
  // call, until the load balancer parts them (tens of milliseconds, whole benchmark runs at
  // 12 us a call instead of 8), whereas the socket's wake-up puts the sleeper on a free core.
  // (Shared-memory waits keep the yields: sleeping at once there gained nothing at 2 ranks and
  // lengthened the tail beside a busy thread at 64 KiB.)
  const int yields = peerHere && w.sleeper && policy.sleepWhenPeerHere ? 0 : 4;
  for (int i = 0; i < yields; i++) {
    sched_yield();
    if (ready(readyArg)) {
      if (!peerHere) policy.spinPaid();
      return ncclSuccess;
    }
  }
  Deadline deadline = Deadline::after(policy.timeoutS);
  int64_t lastPeerCheck = nowNs();
  int64_t lastStallCheck = lastPeerCheck;
  // Sleep slices grow from 50us to 10ms: short enough for prompt aborts, long enough to be idle.
  int64_t sliceNs = 50000;
  for (;;) {
    if (policy.progress) {
      policy.progress->progress();
      if (ready(readyArg)) return ncclSuccess;
    }
    if (w.sleeper) {
      w.sleeper->sleepFor(sliceNs);
    } else {
      uint32_t seen = w.word->load(std::memory_order_seq_cst);
      w.sleepers->fetch_add(1, std::memory_order_seq_cst);
      if (ready(readyArg)) {
        w.sleepers->fetch_sub(1, std::memory_order_seq_cst);
        return ncclSuccess;
      }
      futexWait(w.word, seen, sliceNs);
      w.sleepers->fetch_sub(1, std::memory_order_seq_cst);
    }
    if (ready(readyArg)) return ncclSuccess;
    if (sliceNs < 10000000) sliceNs *= 2;
    if (policy.abort && policy.abort->load(std::memory_order_relaxed))
      return fail(ncclInvalidUsage, "%s: communicator aborted", what);
    int64_t now = nowNs();
    if (peer && now - lastPeerCheck > 20000000) {
      lastPeerCheck = now;
      if (ncclResult_t r = peer->check(); r != ncclSuccess) return addContext(r, "%s", what);
    }
    if (policy.stall && now - lastStallCheck > 20000000) {
      lastStallCheck = now;
      if (ncclResult_t r = policy.stall->onStall(w); r != ncclSuccess) return r;
    }
    if (deadline.expired()) {
      // A peer that passes this last check is running: it is silent, not gone.
      if (peer)
        if (ncclResult_t r = peer->check(); r != ncclSuccess) return addContext(r, "%s", what);
      if (peer && peer->peerRank() >= 0)
        return fail(ncclRemoteError,
                    "%s: timed out after %.1f s (BRAID_TIMEOUT_S) waiting for rank %d, which is "
                    "alive but has not answered",
                    what, policy.timeoutS, peer->peerRank());
      return fail(ncclRemoteError, "%s: timed out after %.1f s (BRAID_TIMEOUT_S)", what,
                  policy.timeoutS);
    }
  }
}

}  // namespace braid::detail
