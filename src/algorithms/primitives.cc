#include "algorithms/primitives.h"

#include "util/status.h"

namespace braid {

Primitives::Primitives(ncclComm& comm, const CollArgs& args, std::span<const int> recvPeers,
                       std::span<const int> sendPeers)
    : comm_(comm), args_(args) {
  size_t slot = comm.config.slotBytes;
  for (int p : recvPeers) {
    if (p < 0) continue;
    recvPeer_[nrecv_] = p;
    recv_[nrecv_++] = &comm.recvFrom[p]->fifo();
  }
  for (int p : sendPeers) {
    if (p < 0) continue;
    send_[nsend_++] = &comm.sendTo[p]->fifo();
  }
  // Steps stay multiples of 64 bytes so the kernels see aligned vectors after the first step.
  maxElems_ = (slot / args.elemSize) & ~size_t(63);
  if (maxElems_ == 0) maxElems_ = slot / args.elemSize;
}

ncclResult_t Primitives::acquireSends(size_t) {
  for (int i = 0; i < nsend_; i++) BRAID_TRY(send_[i]->acquire(comm_.policy, &sendSlot_[i]));
  return ncclSuccess;
}

ncclResult_t Primitives::waitRecvs(size_t n) {
  for (int i = 0; i < nrecv_; i++) {
    SlotInfo info;
    BRAID_TRY(recv_[i]->wait(comm_.policy, &recvSlot_[i], &info));
    if (info.tag != args_.tag || info.bytes != n * args_.elemSize)
      return fail(
          ncclInvalidUsage,
          "operation mismatch: rank %d received %u bytes of operation tag %08x from rank %d "
          "while running %s #%llu (tag %08x, expecting %zu bytes): the ranks called "
          "different collectives, counts, types, ops or roots",
          comm_.rank, info.bytes, info.tag, recvPeer_[i], collName(args_.coll),
          static_cast<unsigned long long>(comm_.opCount), args_.tag, n * args_.elemSize);
  }
  return ncclSuccess;
}

void Primitives::postSends(size_t n) {
  for (int i = 0; i < nsend_; i++)
    send_[i]->post(static_cast<uint32_t>(n * args_.elemSize), args_.tag);
}

void Primitives::releaseRecvs() {
  for (int i = 0; i < nrecv_; i++) recv_[i]->release();
}

ncclResult_t Primitives::send(const void* src, size_t n) {
  if (!args_.reduction) return copySend(src, n);
  BRAID_TRY(acquireSends(n));
  kernels::reduce(args_.op, sendSlot_[0], nsend_ > 1 ? sendSlot_[1] : nullptr, nullptr, src, n,
                  kernels::kApplyPre);
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::copySend(const void* src, size_t n) {
  BRAID_TRY(acquireSends(n));
  kernels::copy(sendSlot_[0], nsend_ > 1 ? sendSlot_[1] : nullptr, src, n * args_.elemSize);
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::copyCopySend(const void* src, void* dst, size_t n) {
  BRAID_TRY(acquireSends(n));
  size_t bytes = n * args_.elemSize;
  if (dst != src) {
    kernels::copy(dst, nsend_ > 0 ? sendSlot_[0] : nullptr, src, bytes);
    if (nsend_ > 1) kernels::copy(sendSlot_[1], nullptr, src, bytes);
  } else if (nsend_ > 0) {
    kernels::copy(sendSlot_[0], nsend_ > 1 ? sendSlot_[1] : nullptr, src, bytes);
  }
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::recv(void* dst, size_t n) {
  BRAID_TRY(waitRecvs(n));
  kernels::copy(dst, nullptr, recvSlot_[0], n * args_.elemSize);
  releaseRecvs();
  return ncclSuccess;
}

ncclResult_t Primitives::recvReduceSend(const void* src, size_t n) {
  BRAID_TRY(waitRecvs(n));
  BRAID_TRY(acquireSends(n));
  kernels::reduce(args_.op, sendSlot_[0], nullptr, recvSlot_[0], src, n, kernels::kApplyPre);
  if (nrecv_ > 1)
    kernels::reduce(args_.op, sendSlot_[0], nullptr, sendSlot_[0], recvSlot_[1], n, 0);
  if (nsend_ > 1) kernels::copy(sendSlot_[1], nullptr, sendSlot_[0], n * args_.elemSize);
  releaseRecvs();
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::recvReduceCopySend(const void* src, void* dst, size_t n) {
  BRAID_TRY(waitRecvs(n));
  BRAID_TRY(acquireSends(n));
  void* firstSend = nsend_ > 0 ? sendSlot_[0] : nullptr;
  if (nrecv_ == 1) {
    // One read of each operand, the final value written to the output and the next peer at once.
    kernels::reduce(args_.op, dst, firstSend, recvSlot_[0], src, n,
                    kernels::kApplyPre | kernels::kApplyPost);
  } else {
    kernels::reduce(args_.op, dst, nullptr, recvSlot_[0], src, n, kernels::kApplyPre);
    kernels::reduce(args_.op, dst, firstSend, dst, recvSlot_[1], n, kernels::kApplyPost);
  }
  if (nsend_ > 1) kernels::copy(sendSlot_[1], nullptr, dst, n * args_.elemSize);
  releaseRecvs();
  postSends(n);
  return ncclSuccess;
}

ncclResult_t Primitives::recvCopySend(void* dst, size_t n) {
  BRAID_TRY(waitRecvs(n));
  BRAID_TRY(acquireSends(n));
  size_t bytes = n * args_.elemSize;
  kernels::copy(dst, nsend_ > 0 ? sendSlot_[0] : nullptr, recvSlot_[0], bytes);
  if (nsend_ > 1) kernels::copy(sendSlot_[1], nullptr, recvSlot_[0], bytes);
  releaseRecvs();
  postSends(n);
  return ncclSuccess;
}

}  // namespace braid
