#include "transports/fifo.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>

#include <sys/mman.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/status.h"

namespace braid {
namespace {
constexpr int64_t kPullIntervalNs = 1000;
}  // namespace

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
  c->senderCpu.store(kUnknownCpu);
  c->tail.store(0);
  c->tailSleepers.store(0);
  c->receiverCpu.store(kUnknownCpu);
  c->closed.store(0);
  c->nslots = nslots;
  c->statusVersion.store(0);
  for (auto& w : c->statusOp) w.store(0);
  c->slotBytes = slotBytes;
  memset(c->info, 0, sizeof(c->info));
  for (auto& p : c->lent) p = nullptr;
  for (auto& l : c->landing) l.store(kLandFree);
  memset(c->claims, 0, sizeof(c->claims));
  mailboxInit(&c->mailbox);
  return c;
}

bool fifoMakeSlotsResident(FifoControl* c, size_t bytes) {
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack the name
#endif
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  bytes = std::min(bytes, c->slotBytes);
  for (uint32_t k = 0; k < c->nslots; k++) {
    // Whole pages from the one holding the slot's first byte to the one holding its last.
    const auto first = reinterpret_cast<uintptr_t>(fifoSlots(c) + k * c->slotBytes);
    const uintptr_t start = first & ~(page - 1);
    const uintptr_t end = (first + bytes + page - 1) & ~(page - 1);
    if (madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE) != 0)
      return false;
  }
  return true;
}

void fifoWriteStatus(FifoControl* c, const uint64_t status[kFifoStatusWords]) {
  uint32_t v = c->statusVersion.load();
  c->statusVersion.store(v + 1);
  for (int i = 0; i < kFifoStatusWords; i++) c->statusOp[i].store(status[i]);
  c->statusVersion.store(v + 2);
}

bool fifoReadStatus(const FifoControl* c, uint64_t status[kFifoStatusWords], uint32_t* version) {
  for (;;) {
    uint32_t before = c->statusVersion.load();
    if (before == 0) return false;
    if (before & 1) continue;
    for (int i = 0; i < kFifoStatusWords; i++) status[i] = c->statusOp[i].load();
    if (c->statusVersion.load() != before) continue;
    if (version) *version = before;
    return true;
  }
}

void FifoSender::publishStatus(const uint64_t status[kFifoStatusWords]) {
  fifoWriteStatus(ctrl_, status);
  futexWakeAll(&ctrl_->head);
}

bool FifoReceiver::peerStatus(uint64_t status[kFifoStatusWords]) const {
  return fifoReadStatus(ctrl_, status);
}

void FifoSender::attach(FifoControl* ctrl, LivenessCheck* peer, bool acceptsLent,
                        SlotPusher* pusher) {
  ctrl_ = ctrl;
  acceptsLent_ = acceptsLent;
  pusher_ = pusher;
  data_ = fifoSlots(ctrl);
  nslots_ = ctrl->nslots;
  slotBytes_ = ctrl->slotBytes;
  head_ = ctrl->head.load();
  peer_ = peer;
  mailbox_.attach(&ctrl->mailbox);
}

void FifoReceiver::attach(FifoControl* ctrl, LivenessCheck* peer, bool acceptsClaims,
                          SlotPuller* puller) {
  ctrl_ = ctrl;
  acceptsClaims_ = acceptsClaims;
  puller_ = puller;
  data_ = fifoSlots(ctrl);
  nslots_ = ctrl->nslots;
  slotBytes_ = ctrl->slotBytes;
  tail_ = ctrl->tail.load();
  peer_ = peer;
  mailbox_.attach(&ctrl->mailbox);
}

ncclResult_t FifoSender::waitForSpace(const WaitPolicy& policy) {
  FifoControl* c = ctrl_;
  uint32_t head = head_, n = nslots_;
  auto ready = [c, head, n] {
    return head - c->tail.load(std::memory_order_acquire) < n || c->closed.load() != 0;
  };
  BRAID_TRY(waitUntil(policy, WakeWord{&c->tail, &c->tailSleepers, &c->receiverCpu}, ready, peer_,
                      "waiting for a free slot to send"));
  if (c->closed.load() != 0) {
    if (peer_) BRAID_TRY(peer_->check());
    return fail(ncclRemoteError, "connection to peer closed");
  }
  return ncclSuccess;
}

ncclResult_t FifoSender::waitReleased(const WaitPolicy& policy) {
  FifoControl* c = ctrl_;
  uint32_t head = head_;
  auto ready = [c, head] {
    return c->tail.load(std::memory_order_acquire) == head || c->closed.load() != 0;
  };
  ncclResult_t r = waitUntil(policy, WakeWord{&c->tail, &c->tailSleepers, &c->receiverCpu}, ready,
                             peer_, "waiting for the peer's connection to send this rank's buffer");
  if (r == ncclSuccess && c->tail.load(std::memory_order_acquire) == head) return ncclSuccess;
  // The reader may still hold lent memory that the caller is about to hand back to the user.
  if (peer_) peer_->sever();
  if (r != ncclSuccess) return r;
  if (peer_) BRAID_TRY(peer_->check());
  return fail(ncclRemoteError, "connection to peer closed");
}

bool FifoReceiver::claim(uint32_t position, void* dst, const SlotInfo& expect) {
  if (!acceptsClaims_ || position - tail_ > nslots_) return false;
  const uint32_t k = position % nslots_;
  LandingClaim& c = ctrl_->claims[k];
  c.dst = dst;
  c.bytes = expect.bytes;
  c.position = position;
  memcpy(c.op, expect.op, sizeof(c.op));
  uint32_t expected = kLandFree;
  return ctrl_->landing[k].compare_exchange_strong(expected, kLandClaimed,
                                                   std::memory_order_acq_rel);
}

void FifoReceiver::revoke(uint32_t position, const WaitPolicy& policy) {
  std::atomic<uint32_t>& state = ctrl_->landing[position % nslots_];
  uint32_t expected = kLandClaimed;
  if (ctrl_->claims[position % nslots_].position != position ||
      state.compare_exchange_strong(expected, kLandFree, std::memory_order_acq_rel) ||
      expected != kLandBusy)
    return;
  // The filler is writing into the claimed buffer: let it finish, or cut it off. Where the
  // waiter is the filler (a puller), the landing goes on only while it pulls.
  Deadline deadline = Deadline::after(policy.timeoutS);
  while (state.load(std::memory_order_acquire) == kLandBusy && !closed() && !deadline.expired() &&
         !(policy.abort && policy.abort->load())) {
    if (puller_) puller_->pull();
    if (state.load(std::memory_order_acquire) != kLandBusy) break;
    if (puller_)
      puller_->sleepFor(100000);
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  if (state.load(std::memory_order_acquire) == kLandBusy && peer_) peer_->sever();
}

ncclResult_t FifoReceiver::waitForData(const WaitPolicy& policy) {
  FifoControl* c = ctrl_;
  uint32_t tail = tail_;
  SlotPuller* puller = puller_;
  // A pull is a system call: a spin pulls about once a microsecond (its budget counts polls of
  // a few nanoseconds each), and at once after every sleep.
  int64_t lastPull = 0;
  auto ready = [c, tail, puller, &lastPull] {
    if (puller && c->head.load(std::memory_order_acquire) == tail) {
      const int64_t now = nowNs();
      if (now - lastPull >= kPullIntervalNs) {
        lastPull = now;
        puller->pull();
      }
    }
    return c->head.load(std::memory_order_acquire) != tail || c->closed.load() != 0;
  };
  // A pulled FIFO has no sender on this host to spin for or to wake this rank: its waits sleep
  // on the puller (the socket).
  WakeWord word = puller ? WakeWord{&c->head, &c->headSleepers, nullptr, puller}
                         : WakeWord{&c->head, &c->headSleepers, &c->senderCpu};
  BRAID_TRY(waitUntil(policy, word, ready, peer_, "waiting for data from peer"));
  if (c->head.load(std::memory_order_acquire) == tail) {
    if (peer_) BRAID_TRY(peer_->check());
    return fail(ncclRemoteError, "connection from peer closed");
  }
  return ncclSuccess;
}

}  // namespace braid
