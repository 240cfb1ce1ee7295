#include "transports/tcp/tcp_proxy.h"

#include <sys/socket.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "util/log.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {
namespace {
// Every slot travels as its descriptor (payload length and operation fingerprint), then payload.
using WireHeader = SlotInfo;
// A header with this tag and no payload is not a slot but the sender's status (fifo.h:
// FifoSender::publishStatus), forwarded into the receiving FIFO's control block. Slot tags are
// odd (fingerprint.h) or small constants, so they never collide with it.
constexpr uint32_t kStatusFrameTag = 0xfffffffeu;
// The header holds the first three status words; the other three follow as its payload.
constexpr uint32_t kStatusExtraBytes = (kFifoStatusWords - 3) * sizeof(uint64_t);
std::mutex failureMutex;

ncclResult_t sendStatusFrame(int fd, const uint64_t status[kFifoStatusWords],
                             const std::atomic<uint32_t>* stop) {
  WireHeader h{kStatusExtraBytes, kStatusFrameTag, {status[0], status[1], status[2]}};
  Deadline never;
  BRAID_TRY(sendAll(fd, &h, sizeof(h), never, stop));
  return sendAll(fd, status + 3, kStatusExtraBytes, never, stop);
}
}  // namespace

TcpProxy::TcpProxy(Direction dir, std::vector<int> fds, uint32_t nslots, size_t slotBytes, int peer)
    : dir_(dir), fds_(std::move(fds)), peer_(peer) {
  size_t bytes = fifoBytes(nslots, slotBytes);
  mem_ = aligned_alloc(4096, bytes);
  if (!mem_) abort();  // allocation failure at setup: nothing sensible to continue with
  fifo_ = fifoInit(mem_, nslots, slotBytes);
  thread_ = std::thread([this] { run(); });
}

TcpProxy::~TcpProxy() {
  sever();
  for (int& fd : fds_) closeFd(fd);
  free(mem_);
}

void TcpProxy::sever() {
  stop_.store(1);
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  fifo_->closed.store(1);
  futexWakeAll(&fifo_->head);
  futexWakeAll(&fifo_->tail);
  if (thread_.joinable()) thread_.join();
}

void TcpProxy::drain(double seconds, const std::atomic<uint32_t>* abort) {
  // Queued slots may belong to a call that already returned success on this rank while its
  // peers are still inside it: a rank that failed at its next call and aborts must not take
  // that call's data down with it. An abort therefore shortens the wait to a grace period
  // (queued slots leave in microseconds when the peer reads) instead of skipping it.
  constexpr double kAbortGraceS = 0.1;
  Deadline deadline = Deadline::after(seconds);
  Deadline grace;
  bool aborting = false;
  while (!failed_.load() && !stop_.load() && fifo_->tail.load() != fifo_->head.load() &&
         !deadline.expired()) {
    if (!aborting && abort && abort->load()) {
      aborting = true;
      grace = Deadline::after(kAbortGraceS);
    }
    if (aborting && grace.expired()) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

ncclResult_t TcpProxy::check() {
  if (!failed_.load()) return ncclSuccess;
  std::lock_guard<std::mutex> lock(failureMutex);
  return fail(ncclRemoteError, "TCP connection %s rank %d failed: %s",
              dir_ == kSend ? "to" : "from", peer_, failure_.c_str());
}

void TcpProxy::run() {
  ncclResult_t r = dir_ == kSend ? sendLoop() : receiveLoop();
  if (r != ncclSuccess && !stop_.load()) {
    {
      std::lock_guard<std::mutex> lock(failureMutex);
      failure_ = lastError();
    }
    failed_.store(true);
    BRAID_INFO(kSubsysNet, "tcp proxy for rank %d stopped: %s", peer_, failure_.c_str());
  }
  // Wake the algorithm side so it notices instead of waiting for its deadline.
  fifo_->closed.store(1);
  futexWakeAll(&fifo_->head);
  futexWakeAll(&fifo_->tail);
}

// The proxy waits without a deadline (the algorithm side has one) but stops on stop_. Frames
// (slots and statuses alike) take the sockets in turn, and the receiver walks them in the same
// order. A status goes out only when no slot is pending, so it never overtakes data the sender
// posted before it: a receiver that sees "my peer has moved on" has all that peer's earlier slots.
ncclResult_t TcpProxy::sendLoop() {
  WaitPolicy policy{64, 0, &stop_};
  FifoControl* c = fifo_;
  FifoReceiver local(c, nullptr);
  Deadline never;
  size_t k = 0;
  uint32_t statusSent = 0;
  for (;;) {
    const void* slot;
    SlotInfo info;
    if (local.tryWait(&slot, &info)) {
      int fd = fds_[k++ % fds_.size()];
      BRAID_TRY(sendAll(fd, &info, sizeof(info), never, &stop_));
      if (info.bytes) BRAID_TRY(sendAll(fd, local.payload(slot), info.bytes, never, &stop_));
      local.release();
      continue;
    }
    uint64_t status[kFifoStatusWords];
    uint32_t version = 0;
    if (c->statusVersion.load() != statusSent && fifoReadStatus(c, status, &version)) {
      BRAID_TRY(sendStatusFrame(fds_[k++ % fds_.size()], status, &stop_));
      statusSent = version;
      continue;
    }
    uint32_t tail = c->tail.load();
    auto ready = [c, tail, statusSent] {
      return c->head.load() != tail || c->closed.load() != 0 ||
             c->statusVersion.load() != statusSent;
    };
    BRAID_TRY(waitUntil(policy, WakeWord{&c->head, &c->headSleepers}, ready, nullptr,
                        "waiting for a slot to send"));
    if (c->head.load() == tail && c->closed.load() != 0)
      return fail(ncclRemoteError, "connection closed");
  }
}

ncclResult_t TcpProxy::receiveLoop() {
  WaitPolicy policy{64, 0, &stop_};
  FifoSender local(fifo_, nullptr);
  Deadline never;
  size_t k = 0;
  for (;;) {
    int fd = fds_[k++ % fds_.size()];
    WireHeader h;
    BRAID_TRY(recvAll(fd, &h, sizeof(h), never, &stop_));
    if (h.tag == kStatusFrameTag && h.bytes == kStatusExtraBytes) {
      uint64_t status[kFifoStatusWords];
      memcpy(status, h.op, sizeof(h.op));
      BRAID_TRY(recvAll(fd, status + 3, kStatusExtraBytes, never, &stop_));
      fifoWriteStatus(fifo_, status);
      continue;
    }
    void* slot;
    BRAID_TRY(local.acquire(policy, &slot));
    if (h.bytes > local.slotBytes())
      return fail(ncclRemoteError, "malformed frame: %u bytes in a %zu-byte slot", h.bytes,
                  local.slotBytes());
    // A claimed position lands in the rank's buffer when the header is the one it expects
    // (fifo.h: FifoReceiver::claim); anything else goes to the slot, where the rank sees the
    // mismatch as usual.
    const uint32_t k = local.posted() % fifo_->nslots;
    void* into = slot;
    if (fifo_->landing[k].exchange(kLandBusy, std::memory_order_acq_rel) == kLandClaimed) {
      const LandingClaim& c = fifo_->claims[k];
      if (c.position == local.posted() && c.bytes == h.bytes &&
          memcmp(c.op, h.op, sizeof(c.op)) == 0)
        into = c.dst;
    }
    if (into == slot) fifo_->landing[k].store(kLandInSlot, std::memory_order_release);
    if (h.bytes) BRAID_TRY(recvAll(fd, into, h.bytes, never, &stop_));
    if (into != slot) fifo_->landing[k].store(kLandLanded, std::memory_order_release);
    local.post(h);
  }
}

}  // namespace braid
