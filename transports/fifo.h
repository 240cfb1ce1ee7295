// The one data path every transport presents: an ordered FIFO of fixed-size slots between two
// ranks. The sender fills the slot at `head` and publishes it; the receiver reads the slot at
// `tail` and gives it back. For shared memory and same-process peers the FIFO lives in memory both
// sides map, so a primitive reduces straight out of a received slot into the next peer's slot;
// for TCP, proxy threads move slots between a local FIFO and the sockets.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "nccl.h"
#include "transports/mailbox.h"
#include "util/status.h"
#include "util/wait.h"

namespace braid {

constexpr uint32_t kMaxFifoSlots = 64;
/// Words of a FIFO status: the sender's current and previous operation fingerprints.
constexpr int kFifoStatusWords = 6;

/// Per-slot descriptor written by the sender before it publishes the slot.
struct SlotInfo {
  uint32_t bytes;  ///< payload length in this slot
  uint32_t tag;    ///< 32-bit summary of `op`
  uint64_t op[3];  ///< the sending operation's fingerprint, opaque here (algorithms/fingerprint.h)
};

/// Control block at the start of a FIFO's memory; counters on their own cache lines.
struct alignas(64) FifoControl {
  alignas(64) std::atomic<uint32_t> head;    ///< slots published by the sender
  std::atomic<uint32_t> headSleepers;        ///< receivers asleep waiting for head
  alignas(64) std::atomic<uint32_t> tail;    ///< slots released by the receiver
  std::atomic<uint32_t> tailSleepers;        ///< senders asleep waiting for tail
  alignas(64) std::atomic<uint32_t> closed;  ///< non-zero: the far side failed or left
  uint32_t nslots;
  /// The sender's current operation and the one before it (two fingerprints), published only
  /// when the sender has been stalled for a while, so a stalled receiver can tell "my peer is
  /// slow" from "my peer is in another call" (one that never sends to me). A seqlock: odd while
  /// being written.
  alignas(64) std::atomic<uint32_t> statusVersion;
  std::atomic<uint64_t> statusOp[kFifoStatusWords];
  uint64_t slotBytes;
  alignas(64) SlotInfo info[kMaxFifoSlots];
  /// Small messages in memory both ends map (mailbox.h); unused where a proxy moves the slots.
  MailboxShared mailbox;
};

/// Bytes of memory a FIFO with these dimensions occupies (control block + slots, page aligned).
size_t fifoBytes(uint32_t nslots, size_t slotBytes);
/// Initialises the FIFO in `mem` (zeroed control block, dimensions recorded).
FifoControl* fifoInit(void* mem, uint32_t nslots, size_t slotBytes);
/// Writes a status (seqlock writer; one writer per FIFO: its sending end).
void fifoWriteStatus(FifoControl* c, const uint64_t status[kFifoStatusWords]);
/// Reads a consistent status; false if none was ever written. `version` (optional) tells
/// successive statuses apart.
bool fifoReadStatus(const FifoControl* c, uint64_t status[kFifoStatusWords],
                    uint32_t* version = nullptr);
inline char* fifoSlots(FifoControl* c) {
  return reinterpret_cast<char*>(c) + ((sizeof(FifoControl) + 4095) & ~size_t(4095));
}

/// Sending end: acquire a free slot, write it, post it.
class FifoSender {
 public:
  FifoSender() = default;
  FifoSender(FifoControl* ctrl, LivenessCheck* peer) { attach(ctrl, peer); }
  void attach(FifoControl* ctrl, LivenessCheck* peer);

  size_t slotBytes() const { return slotBytes_; }
  /// Waits for a free slot and returns where to write it.
  ncclResult_t acquire(const WaitPolicy& policy, void** slot) {
    if (head_ - ctrl_->tail.load(std::memory_order_acquire) >= nslots_) {
      BRAID_TRY(waitForSpace(policy));
    }
    *slot = data_ + static_cast<size_t>(head_ % nslots_) * slotBytes_;
    return ncclSuccess;
  }
  /// Non-blocking acquire: false when every slot is still in use.
  bool tryAcquire(void** slot) {
    if (head_ - ctrl_->tail.load(std::memory_order_acquire) >= nslots_) return false;
    *slot = data_ + static_cast<size_t>(head_ % nslots_) * slotBytes_;
    return true;
  }
  bool closed() const { return ctrl_->closed.load(std::memory_order_relaxed) != 0; }
  LivenessCheck* liveness() const { return peer_; }
  /// Publishes the acquired slot.
  void post(uint32_t bytes, uint32_t tag) { post(SlotInfo{bytes, tag, {}}); }
  /// Publishes the acquired slot with its full descriptor.
  void post(const SlotInfo& info) {
    ctrl_->info[head_ % nslots_] = info;
    head_++;
    ctrl_->head.store(head_, std::memory_order_seq_cst);
    notify(WakeWord{&ctrl_->head, &ctrl_->headSleepers});
  }
  FifoControl* control() const { return ctrl_; }
  MailboxSender& mailbox() { return mailbox_; }
  /// Publishes the sender's current operation (a fingerprint) for the receiver, and wakes whoever
  /// waits on the FIFO (a TCP proxy forwards it as a status frame).
  void publishStatus(const uint64_t status[kFifoStatusWords]);

 private:
  ncclResult_t waitForSpace(const WaitPolicy& policy);
  FifoControl* ctrl_ = nullptr;
  char* data_ = nullptr;
  uint32_t nslots_ = 0;
  size_t slotBytes_ = 0;
  uint32_t head_ = 0;
  LivenessCheck* peer_ = nullptr;
  MailboxSender mailbox_;
};

/// Receiving end: wait for the next slot, read it, release it.
class FifoReceiver {
 public:
  FifoReceiver() = default;
  FifoReceiver(FifoControl* ctrl, LivenessCheck* peer) { attach(ctrl, peer); }
  void attach(FifoControl* ctrl, LivenessCheck* peer);

  size_t slotBytes() const { return slotBytes_; }
  /// Waits for the next slot; returns its data and descriptor.
  ncclResult_t wait(const WaitPolicy& policy, const void** slot, SlotInfo* info) {
    if (ctrl_->head.load(std::memory_order_acquire) == tail_) {
      BRAID_TRY(waitForData(policy));
    }
    *info = ctrl_->info[tail_ % nslots_];
    *slot = data_ + static_cast<size_t>(tail_ % nslots_) * slotBytes_;
    return ncclSuccess;
  }
  /// Non-blocking wait: false when nothing has arrived.
  bool tryWait(const void** slot, SlotInfo* info) {
    if (ctrl_->head.load(std::memory_order_acquire) == tail_) return false;
    *info = ctrl_->info[tail_ % nslots_];
    *slot = data_ + static_cast<size_t>(tail_ % nslots_) * slotBytes_;
    return true;
  }
  bool closed() const { return ctrl_->closed.load(std::memory_order_relaxed) != 0; }
  LivenessCheck* liveness() const { return peer_; }
  /// Gives the slot returned by wait() back to the sender.
  void release() {
    tail_++;
    ctrl_->tail.store(tail_, std::memory_order_seq_cst);
    notify(WakeWord{&ctrl_->tail, &ctrl_->tailSleepers});
  }
  FifoControl* control() const { return ctrl_; }
  MailboxReceiver& mailbox() { return mailbox_; }
  /// Waits for the next mailbox round (mailbox.h).
  ncclResult_t waitMailbox(const WaitPolicy& policy, const MailboxEntry** entry) {
    return mailbox_.wait(policy, peer_, &ctrl_->closed, entry);
  }
  /// The operation the sender last published (publishStatus); false if it never published.
  bool peerStatus(uint64_t status[kFifoStatusWords]) const;

 private:
  ncclResult_t waitForData(const WaitPolicy& policy);
  FifoControl* ctrl_ = nullptr;
  char* data_ = nullptr;
  uint32_t nslots_ = 0;
  size_t slotBytes_ = 0;
  uint32_t tail_ = 0;
  LivenessCheck* peer_ = nullptr;
  MailboxReceiver mailbox_;
};

}  // namespace braid
