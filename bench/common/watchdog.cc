#include "watchdog.h"

#include <cstdio>

#include "fatal.h"

namespace braid::bench {

Watchdog::Watchdog(int timeoutSeconds, int nThreads, std::string hostname)
    : timeoutSeconds_(timeoutSeconds),
      hostname_(std::move(hostname)),
      deadlines_(static_cast<std::size_t>(nThreads), Clock::time_point::max()),
      phases_(static_cast<std::size_t>(nThreads), "") {
  if (timeoutSeconds_ > 0) watcher_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!watcher_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.join();
}

void Watchdog::arm(int thread, const char* phase) {
  if (timeoutSeconds_ <= 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  deadlines_[thread] = Clock::now() + std::chrono::seconds(timeoutSeconds_);
  phases_[thread] = phase;
  wake_.notify_all();
}

void Watchdog::disarm(int thread) {
  if (timeoutSeconds_ <= 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  deadlines_[thread] = Clock::time_point::max();
}

void Watchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    Clock::time_point next = Clock::time_point::max();
    std::size_t late = deadlines_.size();
    for (std::size_t t = 0; t < deadlines_.size(); ++t) {
      if (deadlines_[t] < next) {
        next = deadlines_[t];
        late = t;
      }
    }
    if (late < deadlines_.size() && Clock::now() >= next) {
      std::printf("%s: Test timeout (%ds) in %s (thread %zu)\n", hostname_.c_str(), timeoutSeconds_,
                  phases_[late], late);
      exitNow(kTestTimeout);
    }
    if (next == Clock::time_point::max()) {
      wake_.wait(lock);
    } else {
      wake_.wait_until(lock, next);
    }
  }
}

}  // namespace braid::bench
