#include "transports/fifo.h"

#include <cstring>
#include <new>

#include "util/status.h"

namespace braid {

size_t fifoBytes(uint32_t nslots, size_t slotBytes) {
  size_t ctrl = (sizeof(FifoControl) + 4095) & ~size_t(4095);
  // A whole number of pages: aligned_alloc(4096, n) requires n to be a multiple of 4096 (any
  // BRAID_SLOT_BYTES, or a small slot count, could make it otherwise).
  return (ctrl + static_cast<size_t>(nslots) * slotBytes + 4095) & ~size_t(4095);
}

FifoControl* fifoInit(void* mem, uint32_t nslots, size_t slotBytes) {
  auto* c = new (mem) FifoControl();
  c->head.store(0);
  c->headSleepers.store(0);
  c->tail.store(0);
  c->tailSleepers.store(0);
  c->closed.store(0);
  c->nslots = nslots;
  c->slotBytes = slotBytes;
  memset(c->info, 0, sizeof(c->info));
  return c;
}

void FifoSender::attach(FifoControl* ctrl, LivenessCheck* peer) {
  ctrl_ = ctrl;
  data_ = fifoSlots(ctrl);
  nslots_ = ctrl->nslots;
  slotBytes_ = ctrl->slotBytes;
  head_ = ctrl->head.load();
  peer_ = peer;
}

void FifoReceiver::attach(FifoControl* ctrl, LivenessCheck* peer) {
  ctrl_ = ctrl;
  data_ = fifoSlots(ctrl);
  nslots_ = ctrl->nslots;
  slotBytes_ = ctrl->slotBytes;
  tail_ = ctrl->tail.load();
  peer_ = peer;
}

ncclResult_t FifoSender::waitForSpace(const WaitPolicy& policy) {
  FifoControl* c = ctrl_;
  uint32_t head = head_, n = nslots_;
  auto ready = [c, head, n] {
    return head - c->tail.load(std::memory_order_acquire) < n || c->closed.load() != 0;
  };
  BRAID_TRY(waitUntil(policy, WakeWord{&c->tail, &c->tailSleepers}, ready, peer_,
                      "waiting for a free slot to send"));
  if (c->closed.load() != 0) {
    if (peer_) BRAID_TRY(peer_->check());
    return fail(ncclRemoteError, "connection to peer closed");
  }
  return ncclSuccess;
}

ncclResult_t FifoReceiver::waitForData(const WaitPolicy& policy) {
  FifoControl* c = ctrl_;
  uint32_t tail = tail_;
  auto ready = [c, tail] {
    return c->head.load(std::memory_order_acquire) != tail || c->closed.load() != 0;
  };
  BRAID_TRY(waitUntil(policy, WakeWord{&c->head, &c->headSleepers}, ready, peer_,
                      "waiting for data from peer"));
  if (c->head.load(std::memory_order_acquire) == tail) {
    if (peer_) BRAID_TRY(peer_->check());
    return fail(ncclRemoteError, "connection from peer closed");
  }
  return ncclSuccess;
}

}  // namespace braid
