// Monotonic time and deadlines: every blocking point in Braid has one.
#pragma once

#include <chrono>
#include <cstdint>

namespace braid {

using Clock = std::chrono::steady_clock;

inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

/// A point in time after which a wait gives up. A non-positive timeout means "never".
class Deadline {
 public:
  Deadline() = default;
  static Deadline after(double seconds) {
    Deadline d;
    d.endNs_ = seconds > 0 ? nowNs() + static_cast<int64_t>(seconds * 1e9) : INT64_MAX;
    return d;
  }
  bool expired() const { return nowNs() >= endNs_; }
  int64_t remainingNs() const { return endNs_ == INT64_MAX ? INT64_MAX : endNs_ - nowNs(); }
  int remainingMs() const {
    int64_t ns = remainingNs();
    if (ns <= 0) return 0;
    return ns > int64_t(1) << 40 ? (1 << 30) : static_cast<int>((ns + 999999) / 1000000);
  }

 private:
  int64_t endNs_ = INT64_MAX;
};

}  // namespace braid
