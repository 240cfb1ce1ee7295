#include "algorithms/primitives.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "algorithms/data_movement.h"
#include "util/status.h"

namespace braid {

ncclResult_t waitForSlot(Context& ctx, const CollArgs& args, int from, size_t bytes,
                         const void** data) {
  SlotInfo info;
  BRAID_TRY(ctx.recvFifo(from).wait(ctx.policy(), data, &info));
  if (fingerprintOf(info) != args.fingerprint || info.bytes != bytes)
    return fail(ncclInvalidUsage, "%s",
                describeMismatch(ctx.rank(), args.fingerprint, bytes, from, info).c_str());
  return ncclSuccess;
}

Primitives::Primitives(Context& ctx, const CollArgs& args, std::span<const int> recvPeers,
                       std::span<const int> sendPeers)
    : ctx_(ctx), args_(args) {
  size_t slot = ctx.config.slotBytes;
  for (int p : recvPeers) {
    if (p < 0) continue;
    recvPeer_[nrecv_] = p;
    recv_[nrecv_++] = &ctx.recvFifo(p);
  }
  for (int p : sendPeers) {
    if (p < 0) continue;
    sendPeer_[nsend_] = p;
    send_[nsend_++] = &ctx.sendFifo(p);
  }
  // Steps stay multiples of 64 bytes so the kernels see aligned vectors after the first step.
  maxElems_ = (slot / args.elemSize) & ~size_t(63);
  if (maxElems_ == 0) maxElems_ = slot / args.elemSize;
}

Primitives::~Primitives() {
  if (!lentPending_ && !plan_) return;
  // An error path (the call returns early): the connections must let go of the user's buffers
  // before it returns. A healthy connection does so within milliseconds; one that does not is
  // stuck behind the peer that failed the call, and is cut (the communicator is unusable after
  // such an error anyway) rather than adding a second timeout to the error's.
  WaitPolicy quick = ctx_.policy();
  quick.timeoutS = std::min(quick.timeoutS, 0.1);
  quick.stall = nullptr;
  if (lentPending_) {
    lentPending_ = false;
    (void)send_[0]->waitReleased(quick);
  }
  if (plan_) {
    // Receives this call will not consume (it failed): nothing may land in them afterwards.
    // The plan is not asked again (the algorithm may have destroyed it already); revoking a
    // position this call never claimed does nothing.
    for (size_t k = received_; k < claimedTo_; k++)
      recv_[0]->revoke(planBase_ + static_cast<uint32_t>(k), quick);
  }
}

void Primitives::landReceives(const LandingPlan& plan) {
  if (nrecv_ != 1 || !recv_[0]->acceptsClaims()) return;
  plan_ = &plan;
  planBase_ = recv_[0]->position();
  for (size_t k = 0; k < recv_[0]->nslots(); k++) claimLanding(k, false);
}

// handOver: claim receive k while releasing receive k - nslots, which used the same slot.
void Primitives::claimLanding(size_t k, bool handOver) {
  void* dst = nullptr;
  size_t n = 0;
  if (!plan_->landing(k, &dst, &n) || n == 0) dst = nullptr;
  const SlotInfo expect = slotInfo(static_cast<uint32_t>(n * args_.elemSize), args_.fingerprint);
  if (handOver)
    recv_[0]->releaseAndClaim(dst, expect);
  else if (dst)
    recv_[0]->claim(planBase_ + static_cast<uint32_t>(k), dst, expect);
  claimedTo_ = k + 1;
}

ncclResult_t Primitives::finish() {
  if (!lentPending_) return ncclSuccess;
  lentPending_ = false;
  if (ncclResult_t r = send_[0]->waitReleased(ctx_.policy()); r != ncclSuccess)
    return describeStall(r, sendPeer_[0], true);
  return ncclSuccess;
}

ncclResult_t Primitives::acquireSends(size_t) {
  for (int i = 0; i < nsend_; i++) {
    if (ncclResult_t r = send_[i]->acquire(ctx_.policy(), &sendSlot_[i]); r != ncclSuccess)
      return describeStall(r, sendPeer_[i], true);
    if (args_.device) sendSlot_[i] = send_[i]->deviceSlot(sendSlot_[i]);
  }
  return ncclSuccess;
}

ncclResult_t Primitives::reduce(void* out0, void* out1, const void* acc, const void* local,
                                size_t n, unsigned flags) {
  return reduceData(ctx_, args_, out0, out1, acc, local, n, flags);
}

ncclResult_t Primitives::copy(void* out0, void* out1, const void* src, size_t bytes) {
  return copyData(ctx_, args_.device, out0, out1, src, bytes);
}

ncclResult_t Primitives::waitRecvs(size_t n) {
  const size_t bytes = n * args_.elemSize;
  for (int i = 0; i < nrecv_; i++) {
    SlotInfo info;
    if (ncclResult_t r = recv_[i]->wait(ctx_.policy(), &recvSlot_[i], &info); r != ncclSuccess)
      return describeStall(r, recvPeer_[i], false);
    // The fingerprint check: three compares per slot, the sender's call named on a mismatch.
    if (fingerprintOf(info) != args_.fingerprint || info.bytes != bytes)
      return fail(
          ncclInvalidUsage, "%s",
          describeMismatch(ctx_.rank(), args_.fingerprint, bytes, recvPeer_[i], info).c_str());
    ctx_.recorder.notePeerSeq(recvPeer_[i], info.op[0]);
    if (args_.device) recvSlot_[i] = recv_[i]->deviceSlot(recvSlot_[i]);
  }
  return ncclSuccess;
}

// A wait that failed (timeout, abort, dead peer): say which peer it was on, where this rank
// stands, what it last heard from each peer and (memory transports) which peers have not read
// what this rank sent them, so a hang report points at the rank that is missing.
ncclResult_t Primitives::describeStall(ncclResult_t code, int peer, bool sending) {
  const unsigned long long mine = args_.fingerprint.seq();
  const uint64_t theirs = ctx_.recorder.peerSeq(peer);
  std::string last = theirs ? "at #" + std::to_string(theirs) : std::string("never");
  std::string unread;
  for (size_t p = 0; p < ctx_.team.sendTo.size(); p++) {
    // A same-process peer's FIFO belongs to that peer, which may already have been destroyed.
    if (!ctx_.team.sendTo[p] || ctx_.team.sendTo[p]->transport().sameProcess) continue;
    const FifoControl* c = ctx_.sendFifo(p).control();
    uint32_t pending =
        c->head.load(std::memory_order_relaxed) - c->tail.load(std::memory_order_relaxed);
    if (pending == 0) continue;
    unread += (unread.empty() ? "" : ", ") + std::string("rank ") + std::to_string(p) + " (" +
              std::to_string(pending) + " slots)";
  }
  if (!unread.empty()) unread = "; not yet read by " + unread;
  addContext(code, "rank %d at #%llu %s rank %d (last heard from %s; peers: %s%s)", ctx_.rank(),
             mine, sending ? "cannot send: no free slot towards" : "is waiting for data from", peer,
             last.c_str(), ctx_.recorder.peerSummary().c_str(), unread.c_str());
  return code;
}

void Primitives::postSends(size_t n) {
  const SlotInfo info = slotInfo(static_cast<uint32_t>(n * args_.elemSize), args_.fingerprint);
  for (int i = 0; i < nsend_; i++) send_[i]->post(info);
}

void Primitives::postLent(const void* data, size_t n) {
  send_[0]->postLent(data, slotInfo(static_cast<uint32_t>(n * args_.elemSize), args_.fingerprint));
  lentPending_ = true;
}

void Primitives::releaseRecvs() {
  if (plan_) {
    claimLanding(received_++ + recv_[0]->nslots(), true);
    return;
  }
  for (int i = 0; i < nrecv_; i++) recv_[i]->release();
}

ncclResult_t Primitives::send(const void* src, size_t n) {
  if (!args_.reduction || (lendInput_ && !args_.op.preMul)) return copySend(src, n);
  BRAID_TRY(acquireSends(n));
  BRAID_TRY(reduce(sendSlot_[0], nsend_ > 1 ? sendSlot_[1] : nullptr, nullptr, src, n,
                   kernels::kApplyPre));
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::copySend(const void* src, size_t n) {
  BRAID_TRY(acquireSends(n));
  if (lendInput_) {
    postLent(src, n);
    return ncclSuccess;
  }
  BRAID_TRY(copy(sendSlot_[0], nsend_ > 1 ? sendSlot_[1] : nullptr, src, n * args_.elemSize));
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::copyCopySend(const void* src, void* dst, size_t n) {
  BRAID_TRY(acquireSends(n));
  size_t bytes = n * args_.elemSize;
  if (dst != src) {
    BRAID_TRY(copy(dst, nsend_ > 0 ? sendSlot_[0] : nullptr, src, bytes));
    if (nsend_ > 1) BRAID_TRY(copy(sendSlot_[1], nullptr, src, bytes));
  } else if (nsend_ > 0) {
    BRAID_TRY(copy(sendSlot_[0], nsend_ > 1 ? sendSlot_[1] : nullptr, src, bytes));
  }
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::recv(void* dst, size_t n) {
  BRAID_TRY(waitRecvs(n));
  if (const void* src = received(); src != dst)
    BRAID_TRY(copy(dst, nullptr, src, n * args_.elemSize));
  releaseRecvs();
  return ncclSuccess;
}

ncclResult_t Primitives::recvReduceSend(const void* src, size_t n) {
  BRAID_TRY(waitRecvs(n));
  BRAID_TRY(acquireSends(n));
  BRAID_TRY(reduce(sendSlot_[0], nullptr, recvSlot_[0], src, n, kernels::kApplyPre));
  if (nrecv_ > 1) BRAID_TRY(reduce(sendSlot_[0], nullptr, sendSlot_[0], recvSlot_[1], n, 0));
  if (nsend_ > 1) BRAID_TRY(copy(sendSlot_[1], nullptr, sendSlot_[0], n * args_.elemSize));
  releaseRecvs();
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::recvReduceCopySend(const void* src, void* dst, size_t n) {
  BRAID_TRY(waitRecvs(n));
  BRAID_TRY(acquireSends(n));
  void* firstSend = nsend_ > 0 && !lend_ ? sendSlot_[0] : nullptr;
  if (nrecv_ == 1) {
    // One read of each operand, the final value written to the output and the next peer at once.
    BRAID_TRY(
        reduce(dst, firstSend, recvSlot_[0], src, n, kernels::kApplyPre | kernels::kApplyPost));
  } else {
    BRAID_TRY(reduce(dst, nullptr, recvSlot_[0], src, n, kernels::kApplyPre));
    BRAID_TRY(reduce(dst, firstSend, dst, recvSlot_[1], n, kernels::kApplyPost));
  }
  if (nsend_ > 1) BRAID_TRY(copy(sendSlot_[1], nullptr, dst, n * args_.elemSize));
  releaseRecvs();
  if (lend_)
    postLent(dst, n);
  else
    postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::recvCopySend(void* dst, size_t n) {
  BRAID_TRY(waitRecvs(n));
  BRAID_TRY(acquireSends(n));
  size_t bytes = n * args_.elemSize;
  const void* src = received();
  if (lend_) {
    if (src != dst) BRAID_TRY(copy(dst, nullptr, src, bytes));
    releaseRecvs();
    postLent(dst, n);
    return ncclSuccess;
  }
  void* firstSend = nsend_ > 0 ? sendSlot_[0] : nullptr;
  if (src != dst)
    BRAID_TRY(copy(dst, firstSend, src, bytes));
  else if (firstSend)
    BRAID_TRY(copy(firstSend, nullptr, src, bytes));
  if (nsend_ > 1) BRAID_TRY(copy(sendSlot_[1], nullptr, src, bytes));
  releaseRecvs();
  postSends(n);
  return ncclSuccess;
}

}  // namespace braid
