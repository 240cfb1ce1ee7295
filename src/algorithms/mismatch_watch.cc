#include "algorithms/mismatch_watch.h"

#include <string>

#include "util/status.h"

namespace braid {

MismatchWatch::MismatchWatch(Context& ctx, const CollArgs& args)
    : ctx_(ctx), args_(args), previous_(ctx.policy().stall) {
  ctx_.policy().stall = this;
}

MismatchWatch::~MismatchWatch() {
  ctx_.policy().stall = previous_;
}

ncclResult_t MismatchWatch::onStall(const WakeWord& waitingOn) {
  const Fingerprint& mine = args_.fingerprint;
  if (!published_) {
    uint64_t status[kFifoStatusWords];
    for (int i = 0; i < 3; i++) {
      status[i] = mine.words[i];
      status[3 + i] = ctx_.ops.lastCollective[i];
    }
    for (auto& conn : ctx_.team.sendTo)
      if (conn) conn->fifo().publishStatus(status);
    published_ = true;
  }
  for (size_t p = 0; p < ctx_.team.recvFrom.size(); p++) {
    if (!ctx_.team.recvFrom[p]) continue;
    FifoReceiver& fifo = ctx_.recvFifo(p);
    uint64_t status[kFifoStatusWords];
    if (!fifo.peerStatus(status)) continue;
    Fingerprint current, previous;
    for (int i = 0; i < 3; i++) {
      current.words[i] = status[i];
      previous.words[i] = status[3 + i];
    }
    const int peer = static_cast<int>(p);
    // The same call number in another call: the two ranks disagree, whoever waits for whom.
    if (current.seq() == mine.seq() && current.kind() < OpKind::kSend && !(current == mine))
      return mismatch(peer, current);
    // Waiting for data from a peer that has already left this call: in its view the call had
    // nothing (more) to send here. Its slots reach this FIFO before its status does, so nothing
    // is still on its way.
    // (A wait sleeps on the FIFO's head for slots, on a mailbox entry for small messages.)
    const bool forSlot = waitingOn.word == &fifo.control()->head;
    const bool forMailbox = fifo.mailbox().waitsOn(waitingOn.word);
    // Looked at again after reading the status: a slot posted before it is visible by now (the
    // wait's own check came earlier, and this thread may have been descheduled since).
    const void* slot;
    SlotInfo info;
    const bool nothingArrived =
        (forSlot && !fifo.tryWait(&slot, &info)) || (forMailbox && !fifo.mailbox().ready());
    if (nothingArrived && current.seq() > mine.seq()) {
      if (previous.seq() == mine.seq() && !(previous == mine)) return mismatch(peer, previous);
      return fail(ncclInvalidUsage,
                  "operation mismatch: rank %d called %s and waits for data from rank %d, but "
                  "rank %d has already left call #%llu (it is in %s)",
                  ctx_.rank(), describeCall(mine).c_str(), peer, peer,
                  static_cast<unsigned long long>(mine.seq()), describeCall(current).c_str());
    }
  }
  return ncclSuccess;
}

ncclResult_t MismatchWatch::mismatch(int peer, const Fingerprint& theirs) {
  SlotInfo info = slotInfo(0, theirs);
  return fail(ncclInvalidUsage, "%s",
              describeMismatch(ctx_.rank(), args_.fingerprint, 0, peer, info).c_str());
}

}  // namespace braid
