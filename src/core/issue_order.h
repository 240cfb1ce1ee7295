// A communicator's operations run in the order they were issued, whatever stream each names (as
// in NCCL). Work that runs later on another thread (a host step enqueued on a CUDA stream) takes
// a ticket when it is issued and waits for its turn when it runs; a call that runs at once waits
// only while tickets are outstanding.
#pragma once

#include <atomic>
#include <cstdint>

#include "nccl.h"
#include "util/wait.h"

namespace braid {

class IssueOrder {
 public:
  /// A ticket for work that will run later. Only the thread calling the communicator issues.
  uint32_t issue() { return issued_.fetch_add(1, std::memory_order_relaxed); }
  /// True when no issued ticket is waiting or running (the caller may run at once).
  bool idle() const {
    return issued_.load(std::memory_order_relaxed) == done_.load(std::memory_order_acquire);
  }
  /// Waits until every earlier ticket has run, or fails on abort or timeout.
  ncclResult_t waitTurn(uint32_t ticket, double timeoutS, const std::atomic<uint32_t>* abort);
  /// The ticket's work has run: the next may.
  void finish(uint32_t ticket);

 private:
  std::atomic<uint32_t> issued_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<uint32_t> sleepers_{0};
};

}  // namespace braid
