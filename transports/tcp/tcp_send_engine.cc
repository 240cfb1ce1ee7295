#include "transports/tcp/tcp_send_engine.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "util/log.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {

TcpSendEngine::TcpSendEngine(std::vector<int> fds, uint32_t nslots, size_t slotBytes,
                             size_t inlineBytes, int peer)
    : fds_(std::move(fds)), end_("TCP", "to", peer, nslots, slotBytes), inlineBytes_(inlineBytes) {
  queue_.attach(end_.fifo(), nullptr);
  thread_ = std::thread([this] { run(); });
}

TcpSendEngine::~TcpSendEngine() {
  sever();
  for (int& fd : fds_) closeFd(fd);
}

void TcpSendEngine::sever() {
  stop_.store(1);
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  end_.fifo()->closed.store(1);
  futexWakeAll(&end_.fifo()->head);
  futexWakeAll(&end_.fifo()->tail);
  if (thread_.joinable()) thread_.join();
  // A poster sending right now may be reading lent memory: wait for it to stop.
  std::lock_guard<std::mutex> lock(mutex_);
}

void TcpSendEngine::drain(double seconds, const std::atomic<uint32_t>* abort) {
  end_.drain(seconds, abort, stop_);
}

void TcpSendEngine::pushPosted(const SlotInfo& info) {
  FifoControl* c = end_.fifo();
  // A payload the rank copied into its slot (not lent): the other slots get pages for it now.
  if (!c->lent[(c->head.load(std::memory_order_relaxed) - 1) % c->nslots])
    end_.slotFilling(info.bytes);
  // Inline only when this slot is all that is queued: earlier (larger) slots are the thread's.
  const bool alone =
      c->head.load(std::memory_order_relaxed) - c->tail.load(std::memory_order_acquire) == 1;
  if (alone && info.bytes <= inlineBytes_ && !stop_.load() && !end_.failed() && mutex_.try_lock()) {
    const Push p = pushLocked();
    mutex_.unlock();
    if (p == Push::kIdle) return;
    if (p == Push::kFailed) {
      end_.markFailed();
      return;
    }
  }
  handoff_.store(true, std::memory_order_seq_cst);
  notify(WakeWord{&c->head, &c->headSleepers});
}

TcpSendEngine::Push TcpSendEngine::pushLocked() {
  for (;;) {
    if (stop_.load(std::memory_order_relaxed)) return Push::kIdle;
    if (!inFrame_) {
      const void* slot;
      uint64_t status[kFifoStatusWords];
      uint32_t version = 0;
      if (queue_.tryWait(&slot, &header_)) {
        payload_ = queue_.payload(slot);
        frameIsSlot_ = true;
      } else if (end_.fifo()->statusVersion.load() != statusSent_.load() &&
                 fifoReadStatus(end_.fifo(), status, &version)) {
        // A status goes out only when no slot is pending, so it never overtakes data posted
        // before it: a receiver that sees "my peer has moved on" has all its earlier slots.
        header_ = WireHeader{kStatusExtraBytes, kStatusFrameTag, {status[0], status[1], status[2]}};
        memcpy(statusExtra_, status + 3, sizeof(statusExtra_));
        payload_ = statusExtra_;
        frameIsSlot_ = false;
        statusSent_.store(version);
      } else {
        return Push::kIdle;
      }
      inFrame_ = true;
      sent_ = 0;
    }
    const int fd = fds_[frames_ % fds_.size()];
    const size_t total = sizeof(header_) + header_.bytes;
    while (sent_ < total) {
      iovec iov[2];
      int n = 0;
      if (sent_ < sizeof(header_))
        iov[n++] = {reinterpret_cast<char*>(&header_) + sent_, sizeof(header_) - sent_};
      const size_t payloadSent = sent_ > sizeof(header_) ? sent_ - sizeof(header_) : 0;
      if (header_.bytes > payloadSent)
        iov[n++] = {const_cast<char*>(static_cast<const char*>(payload_)) + payloadSent,
                    header_.bytes - payloadSent};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = n;
      const ssize_t s = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (s > 0) {
        sent_ += static_cast<size_t>(s);
        continue;
      }
      if (s < 0 && errno == EINTR) continue;
      if (s < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        blockedFd_ = fd;
        return Push::kBlocked;
      }
      fail(ncclRemoteError, "send: %s (peer closed the connection?)",
           s < 0 ? strerror(errno) : "nothing sent");
      return Push::kFailed;
    }
    inFrame_ = false;
    frames_++;
    if (frameIsSlot_) queue_.release();
  }
}

void TcpSendEngine::run() {
  if (sendLoop() != ncclSuccess && !stop_.load()) end_.markFailed();
}

// The thread waits without a deadline (the rank has one) but stops on stop_.
ncclResult_t TcpSendEngine::sendLoop() {
  WaitPolicy policy{64, 0, &stop_};
  FifoControl* c = end_.fifo();
  for (;;) {
    // Only slots the poster handed over: a slot it is sending itself is not this thread's, and
    // waking for it would take the poster's core and its lock.
    auto ready = [c, this] {
      return handoff_.load() || c->closed.load() != 0 ||
             c->statusVersion.load() != statusSent_.load();
    };
    BRAID_TRY(waitUntil(policy, WakeWord{&c->head, &c->headSleepers}, ready, nullptr,
                        "waiting for a slot to send"));
    if (stop_.load()) return ncclSuccess;
    if (c->head.load() == c->tail.load() && c->closed.load() != 0)
      return fail(ncclRemoteError, "connection closed");
    // Cleared before the push: a slot handed over from here on sets it again.
    handoff_.store(false, std::memory_order_seq_cst);
    int blocked = -1;
    Push p;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      p = pushLocked();
      blocked = blockedFd_;
    }
    if (p == Push::kFailed) return ncclRemoteError;
    if (p == Push::kBlocked) {
      // The socket is full: sleep until it drains (short slices, so stop_ is seen promptly),
      // then carry on with what is still queued.
      handoff_.store(true, std::memory_order_seq_cst);
      pollfd pf{blocked, POLLOUT, 0};
      poll(&pf, 1, 100);
    }
  }
}

}  // namespace braid
