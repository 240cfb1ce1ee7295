#include "algorithms/p2p.h"

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
  const P2pOp* op;
  Fingerprint fingerprint;  ///< a Send's: {seq, bytes, receiver}; the receiver expects the same
  size_t done = 0;
  bool finished = false;
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
ncclResult_t runSelf(ncclComm& comm, const std::vector<P2pOp>& ops, bool device) {
  const int self = comm.rank;
  std::vector<const P2pOp*> sends, recvs;
  for (const P2pOp& op : ops)
    if (op.peer == self) (op.isSend ? sends : recvs).push_back(&op);
  if (sends.size() != recvs.size())
    return fail(ncclInvalidUsage, "rank %d posted %zu sends to itself but %zu receives from itself",
                self, sends.size(), recvs.size());
  for (size_t i = 0; i < sends.size(); i++) {
    if (sends[i]->bytes != recvs[i]->bytes)
      return fail(ncclInvalidUsage, "rank %d sends %zu bytes to itself but receives %zu", self,
                  sends[i]->bytes, recvs[i]->bytes);
    if (sends[i]->bytes && recvs[i]->dst != sends[i]->src)
      BRAID_TRY(copyData(comm, device, recvs[i]->dst, nullptr, sends[i]->src, sends[i]->bytes));
  }
  return ncclSuccess;
}

// Sleeps until the first pending transfer can move (its peer posts a slot or frees one), or
// for at most sliceNs; the sleeper count tells the peer's post/release to wake this rank.
void sleepOnFirstPending(ncclComm& comm, const std::vector<Progress>& work, int64_t sliceNs) {
  for (const Progress& p : work) {
    if (p.finished) continue;
    FifoControl* c = p.op->isSend ? comm.sendTo[p.op->peer]->fifo().control()
                                  : comm.recvFrom[p.op->peer]->fifo().control();
    std::atomic<uint32_t>* word = p.op->isSend ? &c->tail : &c->head;
    std::atomic<uint32_t>* sleepers = p.op->isSend ? &c->tailSleepers : &c->headSleepers;
    uint32_t seen = word->load(std::memory_order_seq_cst);
    sleepers->fetch_add(1, std::memory_order_seq_cst);
    bool ready;
    if (p.op->isSend) {
      void* slot;
      ready = comm.sendTo[p.op->peer]->fifo().tryAcquire(&slot);
    } else {
      const void* slot;
      SlotInfo info;
      ready = comm.recvFrom[p.op->peer]->fifo().tryWait(&slot, &info);
    }
    if (!ready) futexWait(word, seen, sliceNs);
    sleepers->fetch_sub(1, std::memory_order_seq_cst);
    return;
  }
}

}  // namespace

static ncclResult_t runBatch(ncclComm& comm, const std::vector<P2pOp>& ops, bool device) {
  BRAID_TRY(runSelf(comm, ops, device));
  std::vector<Progress> work;
  for (const P2pOp& op : ops) {
    if (op.peer == comm.rank || op.bytes == 0) continue;
    bool connected =
        op.isSend ? comm.sendTo[op.peer] != nullptr : comm.recvFrom[op.peer] != nullptr;
    if (!connected)
      return fail(ncclInvalidUsage,
                  "rank %d has no connection to rank %d (BRAID_CONNECT=neighbours?)", comm.rank,
                  op.peer);
    uint64_t seq = op.isSend ? ++comm.p2pSendSeq[op.peer] : ++comm.p2pRecvSeq[op.peer];
    work.push_back(
        Progress{&op, sendFingerprint(seq, op.bytes, op.isSend ? op.peer : comm.rank, device)});
  }
  const size_t slot = comm.config.slotBytes;
  Deadline deadline = Deadline::after(comm.policy.timeoutS);
  int idle = 0;
  size_t remaining = work.size();
  while (remaining > 0) {
    bool progressed = false;
    for (Progress& p : work) {
      if (p.finished) continue;
      const P2pOp& op = *p.op;
      size_t len = std::min(slot, op.bytes - p.done);
      if (op.isSend) {
        FifoSender& f = comm.sendTo[op.peer]->fifo();
        void* s;
        if (!f.tryAcquire(&s)) continue;
        if (device) s = f.deviceSlot(s);
        BRAID_TRY(copyData(comm, device, s, nullptr, op.src + p.done, len));
        f.post(slotInfo(static_cast<uint32_t>(len), p.fingerprint));
      } else {
        FifoReceiver& f = comm.recvFrom[op.peer]->fifo();
        const void* s;
        SlotInfo info;
        if (!f.tryWait(&s, &info)) continue;
        if (fingerprintOf(info) != p.fingerprint || info.bytes != len)
          return fail(ncclInvalidUsage, "%s",
                      describeMismatch(comm.rank, p.fingerprint, len, op.peer, info).c_str());
        if (device) s = f.deviceSlot(s);
        BRAID_TRY(copyData(comm, device, op.dst + p.done, nullptr, s, len));
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
      if (idle > 0 && idle < comm.policy.spinBudget()) comm.policy.spinPaid();
      idle = 0;
      continue;
    }
    // Nothing moved: spin within the communicator's adaptive budget (as every other wait
    // does), then sleep on the first pending transfer's FIFO word, so its peer's post or
    // release wakes this rank at once; the other transfers are polled between slices.
    const int budget = comm.policy.spinBudget();
    if (++idle < budget) {
      cpuRelax();
      continue;
    }
    // Spinning did not pay this time (the floor it keeps took a 2-rank 8-byte send/recv from
    // 18 us to 1.7).
    if (idle == budget) comm.policy.spinFailed(budget);
    if (comm.abortFlag.load())
      return fail(ncclInvalidUsage, "point-to-point: communicator aborted");
    if (deadline.expired())
      return fail(ncclRemoteError,
                  "point-to-point: timed out after %.1f s (BRAID_TIMEOUT_S) on rank %d with %zu "
                  "transfers pending: %s (collectives: this rank at #%llu; peers: %s)",
                  comm.policy.timeoutS, comm.rank, remaining, pendingTransfers(work).c_str(),
                  static_cast<unsigned long long>(comm.opCount),
                  comm.recorder.peerSummary().c_str());
    if ((idle - budget) % 16 == 15) {
      for (Progress& p : work) {
        if (p.finished) continue;
        LivenessCheck* live = p.op->isSend ? comm.sendTo[p.op->peer]->fifo().liveness()
                                           : comm.recvFrom[p.op->peer]->fifo().liveness();
        if (live) BRAID_TRY(live->check());
      }
    }
    // Slices grow from 20 us to 2 ms: prompt when several transfers alternate, idle otherwise.
    int64_t sliceNs = std::min<int64_t>(2000000, int64_t{20000} << std::min(idle - budget, 7));
    sleepOnFirstPending(comm, work, sliceNs);
  }
  return ncclSuccess;
}

ncclResult_t runP2pBatch(ncclComm& comm, const std::vector<P2pOp>& ops, bool device) {
  uint64_t bytes = 0;
  for (const P2pOp& op : ops) bytes += op.bytes;
  const int64_t entry = comm.recorder.begin(0, "Send/Recv", bytes, "p2p");
  ncclResult_t r = runBatch(comm, ops, device);
  comm.recorder.setState(entry, r == ncclSuccess ? OpState::kDone : OpState::kFailed);
  if (r != ncclSuccess) comm.recorder.dumpOnFirstFailure(lastError());
  return r;
}

}  // namespace braid
