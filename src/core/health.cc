#include "core/health.h"

#include <chrono>
#include <thread>

namespace braid {

void Health::setError(ncclResult_t code, const std::string& text) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int now = error_.load();
  if (now == ncclSuccess || now == ncclInProgress) {
    text_ = text;
    error_.store(code);
  }
}

std::string Health::errorText() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return text_;
}

void Health::workQueued() {
  std::lock_guard<std::mutex> lock(mutex_);
  queued_++;
  // An earlier error stays visible; otherwise the communicator is busy until the work is done.
  int idle = ncclSuccess;
  error_.compare_exchange_strong(idle, ncclInProgress);
}

void Health::workDone() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--queued_ > 0) return;
  int busy = ncclInProgress;
  error_.compare_exchange_strong(busy, ncclSuccess);
}

void Health::clearError() {
  std::lock_guard<std::mutex> lock(mutex_);
  error_.store(ncclSuccess);
}

void Health::abortCalls() {
  abortFlag.store(1);
  // Calls blocked on the communicator notice the flag within a sleep slice and leave.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (activeCalls.load() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace braid
