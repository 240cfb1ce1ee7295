// -T timeout: host collectives block inside the library, so nothing can poll them the way
// nccl-tests polls a stream. A watchdog thread ends the process instead when an armed phase
// outlives its deadline (braidrun or mpirun then stops the other processes).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace braid::bench {

class Watchdog {
 public:
  /// timeoutSeconds <= 0 disables it (arm/disarm do nothing).
  Watchdog(int timeoutSeconds, int nThreads, std::string hostname);
  ~Watchdog();

  /// Starts thread's deadline for a phase (named in the timeout message).
  void arm(int thread, const char* phase);
  void disarm(int thread);

 private:
  void watch();

  using Clock = std::chrono::steady_clock;
  int timeoutSeconds_;
  std::string hostname_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Clock::time_point> deadlines_;  // time_point::max() when disarmed
  std::vector<const char*> phases_;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace braid::bench
