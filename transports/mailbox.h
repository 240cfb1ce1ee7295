// The low-latency path of a memory FIFO: a two-entry mailbox in the FIFO's control block, beside
// the slots. A small message goes in with its sequence number in the same cache line as its first
// 48 bytes, so an 8-byte exchange costs one cache-line transfer each way: no slot to acquire, no
// separate head counter to publish, no tail to give back.
//
// There is no "released" signal. Entry s % 2 is rewritten at s + 2, which is safe only where both
// ends send to each other every round (an allreduce's one-shot exchange): a sender starts round
// s + 2 only after it has received the peer's round s + 1, which the peer sent after it had
// finished reading round s. Algorithms that send one way must use the slots.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "nccl.h"
#include "util/wait.h"

namespace braid {

/// Payload bytes one mailbox entry holds.
constexpr size_t kMailboxBytes = 4096 - 32;

/// One entry: the header shares the first cache line with the first 32 payload bytes.
struct alignas(64) MailboxEntry {
  std::atomic<uint32_t> seq;  ///< the round whose payload this holds (published last)
  uint32_t bytes;             ///< payload length
  uint64_t op[3];             ///< the sending operation's fingerprint, opaque here
  unsigned char data[kMailboxBytes];
};
static_assert(sizeof(MailboxEntry) == 4096);

/// The shared part: two entries, the count of receivers asleep on them, and the core the
/// sender last posted from (on the sleepers' line, which a receiver reads before it sleeps).
struct alignas(64) MailboxShared {
  MailboxEntry entry[2];
  alignas(64) std::atomic<uint32_t> sleepers;
  std::atomic<uint32_t> senderCpu;
};

void mailboxInit(MailboxShared* m);

/// Sending end: post() writes one round's payload and publishes it.
class MailboxSender {
 public:
  void attach(MailboxShared* m) { m_ = m; }
  /// Writes header and payload in one burst, then the round number: the receiver polls this line,
  /// and every store that found it there would pull it back first, so nothing else is interleaved.
  void post(const void* payload, uint32_t bytes, const uint64_t op[3]) {
    MailboxEntry& e = m_->entry[next_ & 1];
    e.bytes = bytes;
    for (int i = 0; i < 3; i++) e.op[i] = op[i];
    std::memcpy(e.data, payload, bytes);
    e.seq.store(next_, std::memory_order_seq_cst);
    next_++;
    // Read by a receiver only once it found nothing to read: kept off the entry's line.
    const uint32_t cpu = currentCpu();
    if (m_->senderCpu.load(std::memory_order_relaxed) != cpu)
      m_->senderCpu.store(cpu, std::memory_order_relaxed);
    notify(WakeWord{&e.seq, &m_->sleepers});
  }

 private:
  MailboxShared* m_ = nullptr;
  uint32_t next_ = 1;  ///< the round the next post publishes (entries start at 0: never posted)
};

/// Receiving end: wait() for the next round, read it in place, then done().
class MailboxReceiver {
 public:
  void attach(MailboxShared* m) { m_ = m; }
  bool ready() const { return m_->entry[next_ & 1].seq.load(std::memory_order_acquire) == next_; }
  /// Waits for the next round (abort, timeout and a dead peer end the wait with an error).
  ncclResult_t wait(const WaitPolicy& policy, LivenessCheck* peer,
                    const std::atomic<uint32_t>* closed, const MailboxEntry** entry);
  /// The round read by wait() is finished with.
  void done() { next_++; }
  /// Whether a stalled wait sleeps on `word` (the mismatch watch asks whom a wait is for).
  bool waitsOn(const std::atomic<uint32_t>* word) const {
    return word == &m_->entry[0].seq || word == &m_->entry[1].seq;
  }

 private:
  MailboxShared* m_ = nullptr;
  uint32_t next_ = 1;
};

}  // namespace braid
