#include "transports/tcp/tcp_proxy.h"

#include <sys/socket.h>

#include <cstdlib>
#include <chrono>
#include <mutex>
#include <thread>

#include "util/log.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {
namespace {
// Every slot travels as its descriptor (payload length and operation fingerprint), then payload.
using WireHeader = SlotInfo;
std::mutex failureMutex;
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
  stop_.store(1);
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  fifo_->closed.store(1);
  futexWakeAll(&fifo_->head);
  futexWakeAll(&fifo_->tail);
  if (thread_.joinable()) thread_.join();
  for (int& fd : fds_) closeFd(fd);
  free(mem_);
}

void TcpProxy::drain(double seconds, const std::atomic<uint32_t>* abort) {
  Deadline deadline = Deadline::after(seconds);
  while (!failed_.load() && fifo_->tail.load() != fifo_->head.load() && !deadline.expired() &&
         !(abort && abort->load()))
    std::this_thread::sleep_for(std::chrono::microseconds(200));
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

// The proxy waits without a deadline (the algorithm side has one) but stops on stop_.
ncclResult_t TcpProxy::sendLoop() {
  WaitPolicy policy{64, 0, &stop_};
  FifoReceiver local(fifo_, nullptr);
  Deadline never;
  size_t k = 0;
  for (;;) {
    const void* slot;
    SlotInfo info;
    BRAID_TRY(local.wait(policy, &slot, &info));
    int fd = fds_[k++ % fds_.size()];
    BRAID_TRY(sendAll(fd, &info, sizeof(info), never, &stop_));
    if (info.bytes) BRAID_TRY(sendAll(fd, slot, info.bytes, never, &stop_));
    local.release();
  }
}

ncclResult_t TcpProxy::receiveLoop() {
  WaitPolicy policy{64, 0, &stop_};
  FifoSender local(fifo_, nullptr);
  Deadline never;
  size_t k = 0;
  for (;;) {
    void* slot;
    BRAID_TRY(local.acquire(policy, &slot));
    int fd = fds_[k++ % fds_.size()];
    WireHeader h;
    BRAID_TRY(recvAll(fd, &h, sizeof(h), never, &stop_));
    if (h.bytes > local.slotBytes())
      return fail(ncclRemoteError, "malformed frame: %u bytes in a %zu-byte slot", h.bytes,
                  local.slotBytes());
    if (h.bytes) BRAID_TRY(recvAll(fd, slot, h.bytes, never, &stop_));
    local.post(h);
  }
}

}  // namespace braid
