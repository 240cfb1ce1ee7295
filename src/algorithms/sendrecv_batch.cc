#include "algorithms/sendrecv_batch.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "algorithms/data_movement.h"
#include "algorithms/fingerprint.h"
#include "kernels/reduce.h"
#include "util/clock.h"
#include "util/futex.h"
#include "util/status.h"

namespace braid {
namespace {

struct Progress {
  const Transfer* op;
  Fingerprint fingerprint;  ///< a Send's: {seq, bytes, receiver}; the receiver expects the same
  size_t done = 0;
  bool finished = false;
  /// The batch's previous transfer to the same peer in the same direction (index in the work
  /// list, -1 if none): this one moves only once that one finished, so that the slots of one
  /// FIFO carry the transfers in posting order (a later one must not take a slot that frees up
  /// while the pass is past the earlier one).
  long after = -1;
};

// The transfers still pending when a batch gives up, named for the error text.
std::string pendingTransfers(const std::vector<Progress>& work) {
  std::string s;
  int named = 0;
  for (const Progress& p : work) {
    if (p.finished) continue;
    if (named++ == 8) return s + ", ...";
    if (!s.empty()) s += ", ";
    s += (p.op->isSend ? "send to rank " : "receive from rank ") + std::to_string(p.op->peer) +
         " #" + std::to_string(p.fingerprint.seq()) + " (" + std::to_string(p.done) + " of " +
         std::to_string(p.op->bytes) + " bytes)";
  }
  return s;
}

// Sends to self are matched with receives from self in order and copied directly.
ncclResult_t runSelf(Context& ctx, const std::vector<Transfer>& ops, bool device) {
  const int self = ctx.rank();
  std::vector<const Transfer*> sends, recvs;
  for (const Transfer& op : ops)
    if (op.peer == self) (op.isSend ? sends : recvs).push_back(&op);
  if (sends.size() != recvs.size())
    return fail(ncclInvalidUsage, "rank %d posted %zu sends to itself but %zu receives from itself",
                self, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); i++) {
    if (sends[i]->bytes != recvs[i]->bytes)
      return fail(ncclInvalidUsage, "rank %d sends %zu bytes to itself but receives %zu", self,
                  sends[i]->bytes, recvs[i]->bytes);
    if (sends[i]->bytes && recvs[i]->dst != sends[i]->src)
      BRAID_TRY(copyData(ctx, device, recvs[i]->dst, nullptr, sends[i]->src, sends[i]->bytes));
  }
  return ncclSuccess;
}

// Sleeps until the first pending transfer can move (its peer posts a slot or frees one), or
// for at most sliceNs; the sleeper count tells the peer's post/release to wake this rank.
void sleepOnFirstPending(Context& ctx, const std::vector<Progress>& work, int64_t sliceNs) {
  for (const Progress& p : work) {
    if (p.finished) continue;
    // A receive its waiter pulls (TCP): nothing wakes the FIFO's word, the socket does.
    if (!p.op->isSend)
      if (SlotPuller* puller = ctx.recvFifo(p.op->peer).puller()) {
        puller->sleepFor(sliceNs);
        return;
      }
    FifoControl* c =
        p.op->isSend ? ctx.sendFifo(p.op->peer).control() : ctx.recvFifo(p.op->peer).control();
    std::atomic<uint32_t>* word = p.op->isSend ? &c->tail : &c->head;
    std::atomic<uint32_t>* sleepers = p.op->isSend ? &c->tailSleepers : &c->headSleepers;
    uint32_t seen = word->load(std::memory_order_seq_cst);
    sleepers->fetch_add(1, std::memory_order_seq_cst);
    bool ready;
    if (p.op->isSend) {
      void* slot;
      ready = ctx.sendFifo(p.op->peer).tryAcquire(&slot);
    } else {
      const void* slot;
      SlotInfo info;
      ready = ctx.recvFifo(p.op->peer).tryWait(&slot, &info);
    }
    if (!ready) futexWait(word, seen, sliceNs);
    sleepers->fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
}

}  // namespace

static ncclResult_t runBatch(Context& ctx, const std::vector<Transfer>& ops, bool device) {
  BRAID_TRY(runSelf(ctx, ops, device));
  if (ctx.config.connectOnFirstUse) {
    // Pairs init did not connect connect now, all of this batch's at once (their peers' matching
    // batches ask for this rank in turn).
    std::vector<int> missing;
    for (const Transfer& op : ops)
      if (op.peer != ctx.rank() && op.bytes > 0 &&
          !(op.isSend ? ctx.team.sendTo[op.peer] != nullptr
                      : ctx.team.recvFrom[op.peer] != nullptr))
        missing.push_back(op.peer);
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (!missing.empty()) BRAID_TRY(ctx.team.connectPairs(missing));
  }
  std::vector<Progress> work;
  std::vector<long> lastSend(ctx.nranks(), -1), lastRecv(ctx.nranks(), -1);
  for (const Transfer& op : ops) {
    if (op.peer == ctx.rank() || op.bytes == 0) continue;
    bool connected =
        op.isSend ? ctx.team.sendTo[op.peer] != nullptr : ctx.team.recvFrom[op.peer] != nullptr;
    if (!connected)
      return fail(ncclInvalidUsage,
                  "rank %d has no connection to rank %d: BRAID_CONNECT=neighbours connects only "
                  "ring, tree and hierarchical peers (auto or all connect the others)",
                  ctx.rank(), op.peer);
    uint64_t seq = op.isSend ? ++ctx.ops.sendSeq[op.peer] : ++ctx.ops.recvSeq[op.peer];
    work.push_back(
        Progress{&op, sendFingerprint(seq, op.bytes, op.isSend ? op.peer : ctx.rank(), device)});
    long& last = (op.isSend ? lastSend : lastRecv)[op.peer];
    work.back().after = last;
    last = static_cast<long>(work.size()) - 1;
  }
  const size_t slot = ctx.config.slotBytes;
  Deadline deadline = Deadline::after(ctx.policy().timeoutS);
  int idle = 0;
  size_t remaining = work.size();
  while (remaining > 0) {
    bool progressed = false;
    for (Progress& p : work) {
      if (p.finished || (p.after >= 0 && !work[p.after].finished)) continue;
      const Transfer& op = *p.op;
      size_t len = std::min(slot, op.bytes - p.done);
      if (op.isSend) {
        FifoSender& f = ctx.sendFifo(op.peer);
        void* s;
        if (!f.tryAcquire(&s)) continue;
        if (device) s = f.deviceSlot(s);
        BRAID_TRY(copyData(ctx, device, s, nullptr, op.src + p.done, len));
        f.post(slotInfo(static_cast<uint32_t>(len), p.fingerprint));
      } else {
        FifoReceiver& f = ctx.recvFifo(op.peer);
        const void* s;
        SlotInfo info;
        if (!f.tryWait(&s, &info)) continue;
        if (fingerprintOf(info) != p.fingerprint || info.bytes != len)
          return fail(ncclInvalidUsage, "%s",
                      describeMismatch(ctx.rank(), p.fingerprint, len, op.peer, info).c_str());
        if (device) s = f.deviceSlot(s);
        BRAID_TRY(copyData(ctx, device, op.dst + p.done, nullptr, s, len));
        f.release();
      }
      p.done += len;
      progressed = true;
      if (p.done == op.bytes) {
        p.finished = true;
        remaining--;
      }
    }
    if (progressed) {
      // Spinning paid (the peer answered within the budget): grow the budget back.
      if (idle > 0 && idle < ctx.policy().spinBudget()) ctx.policy().spinPaid();
      idle = 0;
      continue;
    }
    // Nothing moved: spin within the communicator's adaptive budget (as every other wait
    // does), then sleep on the first pending transfer's FIFO word, so its peer's post or
    // release wakes this rank at once; the other transfers are polled between slices.
    const int budget = ctx.policy().spinBudget();
    if (++idle < budget) {
      cpuRelax();
      continue;
    }
    // Spinning did not pay this time: the budget shrinks, down to its floor (util/wait.h), which
    // still lets a peer that is running answer before this rank sleeps.
    if (idle == budget) ctx.policy().spinFailed(budget);
    if (ctx.policy().abort && ctx.policy().abort->load())
      return fail(ncclInvalidUsage, "point-to-point: communicator aborted");
    if (deadline.expired())
      return fail(ncclRemoteError,
                  "point-to-point: timed out after %.1f s (BRAID_TIMEOUT_S) on rank %d with %zu "
                  "transfers pending: %s (collectives: this rank at #%llu; peers: %s)",
                  ctx.policy().timeoutS, ctx.rank(), remaining, pendingTransfers(work).c_str(),
                  static_cast<unsigned long long>(ctx.ops.opCount),
                  ctx.recorder.peerSummary().c_str());
    if ((idle - budget) % 16 == 15) {
      for (Progress& p : work) {
        if (p.finished) continue;
        LivenessCheck* live = p.op->isSend ? ctx.sendFifo(p.op->peer).liveness()
                                           : ctx.recvFifo(p.op->peer).liveness();
        if (live) BRAID_TRY(live->check());
      }
    }
    // Slices grow from 20 us to 2 ms: prompt when several transfers alternate, idle otherwise.
    int64_t sliceNs = std::min<int64_t>(2000000, int64_t{20000} << std::min(idle - budget, 7));
    if (ctx.policy().progress) ctx.policy().progress->progress();
    sleepOnFirstPending(ctx, work, sliceNs);
  }
  return ncclSuccess;
}

ncclResult_t runSendRecvBatch(Context& ctx, const std::vector<Transfer>& ops, bool device) {
  uint64_t bytes = 0;
  for (const Transfer& op : ops) bytes += op.bytes;
  const int64_t entry = ctx.recorder.begin(0, "Send/Recv", bytes, "p2p");
  ncclResult_t r = runBatch(ctx, ops, device);
  ctx.recorder.setState(entry, r == ncclSuccess ? OpState::kDone : OpState::kFailed);
  if (r != ncclSuccess) ctx.recorder.dumpOnFirstFailure(lastError());
  return r;
}

}  // namespace braid
