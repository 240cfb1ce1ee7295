#include "transports/mailbox.h"

#include "util/status.h"

namespace braid {

void mailboxInit(MailboxShared* m) {
  for (MailboxEntry& e : m->entry) {
    e.seq.store(0);
    e.bytes = 0;
    for (uint64_t& w : e.op) w = 0;
  }
  m->sleepers.store(0);
  m->senderCpu.store(kUnknownCpu);
}

ncclResult_t MailboxReceiver::wait(const WaitPolicy& policy, LivenessCheck* peer,
                                   const std::atomic<uint32_t>* closed,
                                   const MailboxEntry** entry) {
  MailboxEntry& e = m_->entry[next_ & 1];
  if (!ready()) {
    auto arrived = [this, closed] { return ready() || closed->load() != 0; };
    BRAID_TRY(waitUntil(policy, WakeWord{&e.seq, &m_->sleepers, &m_->senderCpu}, arrived, peer,
                        "waiting for a small message from peer"));
    if (!ready()) {
      if (peer) BRAID_TRY(peer->check());
      return fail(ncclRemoteError, "connection from peer closed");
    }
  }
  *entry = &e;
  return ncclSuccess;
}

}  // namespace braid
