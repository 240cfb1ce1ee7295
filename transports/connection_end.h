// What both ends of a connection that a proxy fills or drains keep (TCP: tcp_receive_pump.h,
// tcp_send_engine.h; net plugins: net/net_connection.h): the local FIFO between the rank and the
// wire, and the connection's failure, which any thread may check.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "transports/fifo.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

class ConnectionEnd {
 public:
  /// `transport` (as logs name it: "TCP", "NET/UCX"), `direction` ("to" or "from") and `peer`
  /// name the connection in its failure.
  ConnectionEnd(std::string transport, const char* direction, int peer, uint32_t nslots,
                size_t slotBytes)
      : transport_(std::move(transport)), direction_(direction), peer_(peer) {
    mem_ = aligned_alloc(4096, fifoBytes(nslots, slotBytes));
    if (!mem_) abort();  // allocation failure at setup: nothing sensible to continue with
    fifo_ = fifoInit(mem_, nslots, slotBytes);
  }
  ~ConnectionEnd() { free(mem_); }
  ConnectionEnd(const ConnectionEnd&) = delete;
  ConnectionEnd& operator=(const ConnectionEnd&) = delete;

  FifoControl* fifo() const { return fifo_; }
  int peer() const { return peer_; }
  /// Called with each slot's size as it is filled: the first slot larger than any before makes
  /// that many bytes of every slot resident (fifoMakeSlotsResident), once per new size, so the
  /// pages of slots a ring has not used yet are not faulted in the middle of later calls.
  /// One compare otherwise. Any thread; two racing here both populate, harmlessly.
  void slotFilling(size_t bytes) {
    if (bytes <= residentBytes_.load(std::memory_order_relaxed)) return;
    const bool done = fifoMakeSlotsResident(fifo_, bytes);
    residentBytes_.store(done ? bytes : SIZE_MAX, std::memory_order_relaxed);
  }
  bool failed() const { return failed_.load(); }
  /// Keeps lastError() as the reason, closes the FIFO and wakes whoever waits on it, so the
  /// rank notices instead of waiting for its deadline.
  void markFailed() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reason_ = lastError();
    }
    failed_.store(true);
    BRAID_INFO(kSubsysNet, "%s: connection %s rank %d failed: %s", transport_.c_str(), direction_,
               peer_, lastError().c_str());
    fifo_->closed.store(1);
    futexWakeAll(&fifo_->head);
    futexWakeAll(&fifo_->tail);
  }
  /// Waits (at most `seconds`) until the reader has released every slot posted so far, the
  /// connection failed, or `stop` is raised. Queued slots may belong to a call that already
  /// returned success on this rank while its peers are still inside it: a rank that failed at
  /// its next call and aborts must not take that call's data down with it, so an `abort` only
  /// shortens the wait to a grace period (queued slots leave in microseconds when the peer
  /// reads) instead of skipping it.
  void drain(double seconds, const std::atomic<uint32_t>* abort,
             const std::atomic<uint32_t>& stop) const {
    constexpr double kAbortGraceS = 0.1;
    Deadline deadline = Deadline::after(seconds);
    Deadline grace;
    bool aborting = false;
    while (!failed() && !stop.load() && fifo_->tail.load() != fifo_->head.load() &&
           !deadline.expired()) {
      if (!aborting && abort && abort->load()) {
        aborting = true;
        grace = Deadline::after(kAbortGraceS);
      }
      if (aborting && grace.expired()) break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  /// ncclSuccess, or ncclRemoteError naming the peer and the reason.
  ncclResult_t check() {
    if (!failed_.load()) return ncclSuccess;
    std::lock_guard<std::mutex> lock(mutex_);
    return fail(ncclRemoteError, "%s connection %s rank %d failed: %s", transport_.c_str(),
                direction_, peer_, reason_.c_str());
  }

 private:
  std::string transport_;
  const char* direction_;
  int peer_;
  void* mem_ = nullptr;
  FifoControl* fifo_ = nullptr;
  /// Slot bytes already resident (slotFilling); SIZE_MAX where the kernel cannot populate.
  std::atomic<size_t> residentBytes_{0};
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  std::string reason_;
};

}  // namespace braid
