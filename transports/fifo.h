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

/// A receive the rank asked to have land straight in its own buffer (FifoReceiver::claim): the
/// reader-side proxy receives the slot at `position` into `dst` when its header matches.
struct LandingClaim {
  void* dst;
  uint32_t bytes;
  uint32_t position;
  uint64_t op[3];
};
/// States of a slot position's landing (FifoControl::landing).
enum LandingState : uint32_t {
  kLandFree = 0,  ///< nothing asked; the proxy receives into the slot
  kLandClaimed,   ///< the rank claimed it; the proxy has not reached it
  kLandBusy,      ///< the proxy is receiving into the claimed buffer
  kLandLanded,    ///< the payload is in the claimed buffer
  kLandInSlot,    ///< the payload is in the slot (unclaimed, or the header did not match)
};

/// Control block at the start of a FIFO's memory; counters on their own cache lines.
struct alignas(64) FifoControl {
  alignas(64) std::atomic<uint32_t> head;    ///< slots published by the sender
  std::atomic<uint32_t> headSleepers;        ///< receivers asleep waiting for head
  std::atomic<uint32_t> senderCpu;           ///< the core the sender last published from
  alignas(64) std::atomic<uint32_t> tail;    ///< slots released by the receiver
  std::atomic<uint32_t> tailSleepers;        ///< senders asleep waiting for tail
  std::atomic<uint32_t> receiverCpu;         ///< the core the receiver last released from
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
  /// Where slot k's payload really is when the sender lent its own memory instead of copying
  /// into the slot (FifoSender::postLent); nullptr: in the slot. Only a FIFO read by a thread of
  /// the sender's own process (a TCP proxy) accepts lent memory.
  const void* lent[kMaxFifoSlots];
  /// Receives landing in the rank's own buffers, per slot; only where a thread of the receiving
  /// rank's process fills the FIFO (a TCP proxy).
  std::atomic<uint32_t> landing[kMaxFifoSlots];
  LandingClaim claims[kMaxFifoSlots];
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
/// Maps the pages of the first `bytes` of every slot now, without changing what they hold (slots
/// may be in use). For FIFOs in private memory, whose pages the kernel maps on first touch: a
/// ring whose calls post an even number of slots uses only every other slot, and a call that
/// shifts the parity (a one-slot barrier) would otherwise fault in 512 KiB in the next calls.
/// False where the kernel cannot (before Linux 5.14); the pages are then mapped on first touch.
bool fifoMakeSlotsResident(FifoControl* c, size_t bytes);

/// A FIFO whose filler is not a thread of its own but whoever waits on the FIFO (a TCP receive):
/// pull() moves what has arrived into the FIFO without blocking; sleepFor() (WaitSleeper) waits
/// until something may have arrived. Safe to call from any thread: one pulls at a time.
class SlotPuller : public WaitSleeper {
 public:
  virtual void pull() = 0;
};

/// A FIFO whose posted slots the posting thread may send itself (a TCP send): told of every
/// post, it sends the slot at once when it can, and otherwise wakes whoever sends later.
class SlotPusher {
 public:
  virtual ~SlotPusher() = default;
  virtual void pushPosted(const SlotInfo& info) = 0;
};

/// Sending end: acquire a free slot, write it, post it.
class FifoSender {
 public:
  FifoSender() = default;
  FifoSender(FifoControl* ctrl, LivenessCheck* peer) { attach(ctrl, peer); }
  /// acceptsLent: the reader is a thread of this process, so postLent() may be used.
  /// pusher: told of every post instead of waking the reader through the FIFO's head word.
  void attach(FifoControl* ctrl, LivenessCheck* peer, bool acceptsLent = false,
              SlotPusher* pusher = nullptr);

  size_t slotBytes() const { return slotBytes_; }
  uint32_t nslots() const { return nslots_; }
  /// Gives the FIFO a second set of slots in GPU memory (the P2P transport): a call on device
  /// buffers writes slot k there instead, with the same control words.
  void setDeviceSlots(char* slots) { deviceData_ = slots; }
  bool hasDeviceSlots() const { return deviceData_ != nullptr; }
  /// The device slot that stands for `slot` (as returned by acquire).
  void* deviceSlot(void* slot) const { return deviceData_ + (static_cast<char*>(slot) - data_); }
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
    if (acceptsLent_) ctrl_->lent[head_ % nslots_] = nullptr;
    postDescriptor(info);
  }
  /// True when postLent() may be used (the reader is a thread of this process).
  bool acceptsLent() const { return acceptsLent_; }
  /// Publishes the acquired slot with its payload at `data` (this rank's memory) instead of in
  /// the slot: the reader sends it from there, saving a copy. `data` must stay unchanged until
  /// the slot is released; waitReleased() waits for that.
  void postLent(const void* data, const SlotInfo& info) {
    ctrl_->lent[head_ % nslots_] = data;
    postDescriptor(info);
  }
  /// Waits until the reader has released every slot posted so far (lent memory is free again).
  /// On failure (timeout, abort, dead peer) the connection is severed, so the reader can never
  /// touch the lent memory after this returns.
  ncclResult_t waitReleased(const WaitPolicy& policy);
  /// Slots posted so far.
  uint32_t posted() const { return head_; }
  /// Payload bytes posted so far: the traffic this connection carried (braidCommGetTraffic).
  uint64_t bytesPosted() const { return bytesPosted_.load(std::memory_order_relaxed); }
  FifoControl* control() const { return ctrl_; }
  MailboxSender& mailbox() { return mailbox_; }
  /// Publishes the sender's current operation (a fingerprint) for the receiver, and wakes whoever
  /// waits on the FIFO (a TCP proxy forwards it as a status frame).
  void publishStatus(const uint64_t status[kFifoStatusWords]);

 private:
  void postDescriptor(const SlotInfo& info) {
    // Only the owning thread writes it; another may read it between operations.
    bytesPosted_.store(bytesPosted_.load(std::memory_order_relaxed) + info.bytes,
                       std::memory_order_relaxed);
    ctrl_->info[head_ % nslots_] = info;
    head_++;
    ctrl_->senderCpu.store(currentCpu(), std::memory_order_relaxed);
    ctrl_->head.store(head_, std::memory_order_seq_cst);
    if (pusher_)
      pusher_->pushPosted(info);
    else
      notify(WakeWord{&ctrl_->head, &ctrl_->headSleepers});
  }
  ncclResult_t waitForSpace(const WaitPolicy& policy);
  FifoControl* ctrl_ = nullptr;
  char* data_ = nullptr;
  uint32_t nslots_ = 0;
  size_t slotBytes_ = 0;
  char* deviceData_ = nullptr;
  uint32_t head_ = 0;
  std::atomic<uint64_t> bytesPosted_{0};
  bool acceptsLent_ = false;
  LivenessCheck* peer_ = nullptr;
  SlotPusher* pusher_ = nullptr;
  MailboxSender mailbox_;
};

/// Receiving end: wait for the next slot, read it, release it.
class FifoReceiver {
 public:
  FifoReceiver() = default;
  FifoReceiver(FifoControl* ctrl, LivenessCheck* peer) { attach(ctrl, peer); }
  /// acceptsClaims: the FIFO is filled by a thread of this process, so claim() may be used.
  /// puller: the FIFO is filled by whoever waits on it (SlotPuller), not by a thread of its own.
  void attach(FifoControl* ctrl, LivenessCheck* peer, bool acceptsClaims = false,
              SlotPuller* puller = nullptr);

  size_t slotBytes() const { return slotBytes_; }
  /// The receiving side of FifoSender::setDeviceSlots.
  void setDeviceSlots(char* slots) { deviceData_ = slots; }
  bool hasDeviceSlots() const { return deviceData_ != nullptr; }
  const void* deviceSlot(const void* slot) const {
    return deviceData_ + (static_cast<const char*>(slot) - data_);
  }
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
    if (!hasData()) return false;
    *info = ctrl_->info[tail_ % nslots_];
    *slot = data_ + static_cast<size_t>(tail_ % nslots_) * slotBytes_;
    return true;
  }
  bool closed() const { return ctrl_->closed.load(std::memory_order_relaxed) != 0; }
  /// Something has arrived that wait() has not yet returned (braidCommProbe).
  bool hasData() {
    if (ctrl_->head.load(std::memory_order_acquire) != tail_) return true;
    if (!puller_) return false;
    puller_->pull();
    return ctrl_->head.load(std::memory_order_acquire) != tail_;
  }
  /// Who fills this FIFO when its waiter does (nullptr: a thread or process of its own).
  SlotPuller* puller() const { return puller_; }
  LivenessCheck* liveness() const { return peer_; }
  /// Where the payload of the slot returned by wait()/tryWait() is: lent memory of the sender
  /// (FifoSender::postLent) or the slot itself.
  const void* payload(const void* slot) const {
    const void* lent = ctrl_->lent[tail_ % nslots_];
    return lent ? lent : slot;
  }
  /// Where the payload of the slot returned by wait() is: the rank's own buffer it claimed
  /// (claim()) or the slot itself.
  const void* landedPayload(const void* slot) const {
    if (!acceptsClaims_ ||
        ctrl_->landing[tail_ % nslots_].load(std::memory_order_acquire) != kLandLanded)
      return slot;
    return ctrl_->claims[tail_ % nslots_].dst;
  }
  bool acceptsClaims() const { return acceptsClaims_; }
  uint32_t nslots() const { return nslots_; }
  /// The position of the next slot wait() returns.
  uint32_t position() const { return tail_; }
  /// Asks that the slot at `position` (no more than nslots past position(); exactly nslots only
  /// from inside release's hand-over, see releaseAndClaim) land in `dst` when its descriptor is
  /// `expect`. False when the filler already passed that position.
  bool claim(uint32_t position, void* dst, const SlotInfo& expect);
  /// Withdraws a claim that will not be consumed (an operation that failed): afterwards nothing
  /// writes into its buffer. Waits while a landing is in progress; severs the connection if it
  /// does not end within the policy's timeout.
  void revoke(uint32_t position, const WaitPolicy& policy);
  /// Gives the slot back and, before the filler can reuse it, claims its next use (position() +
  /// nslots) for `dst` (when `dst` is not null).
  void releaseAndClaim(void* dst, const SlotInfo& expect) {
    if (acceptsClaims_) {
      ctrl_->landing[tail_ % nslots_].store(kLandFree, std::memory_order_relaxed);
      if (dst) claim(tail_ + nslots_, dst, expect);
    }
    advance();
  }
  /// Gives the slot returned by wait() back to the sender.
  void release() {
    if (acceptsClaims_) ctrl_->landing[tail_ % nslots_].store(kLandFree, std::memory_order_relaxed);
    advance();
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
  void advance() {
    tail_++;
    ctrl_->receiverCpu.store(currentCpu(), std::memory_order_relaxed);
    ctrl_->tail.store(tail_, std::memory_order_seq_cst);
    notify(WakeWord{&ctrl_->tail, &ctrl_->tailSleepers});
  }
  FifoControl* ctrl_ = nullptr;
  char* data_ = nullptr;
  char* deviceData_ = nullptr;
  uint32_t nslots_ = 0;
  size_t slotBytes_ = 0;
  uint32_t tail_ = 0;
  bool acceptsClaims_ = false;
  LivenessCheck* peer_ = nullptr;
  SlotPuller* puller_ = nullptr;
  MailboxReceiver mailbox_;
};

}  // namespace braid
