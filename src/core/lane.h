// A communicator's own thread, started on first use: it runs queued tasks in order. The executor
// uses it for a non-blocking communicator's work and for this communicator's share of a group
// that spans several (one thread driving every rank of ncclCommInitAll hands each rank's share to
// its lane, so the ranks progress together instead of deadlocking on each other).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace braid {

class Lane {
 public:
  Lane() = default;
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  /// Runs what is queued, then stops the thread.
  ~Lane();
  /// Queues `task`; it runs on the lane's thread after every task queued before it.
  void submit(std::function<void()> task);
  /// Tasks queued or running.
  size_t pending() const;
  /// Waits until every task queued so far has run.
  void drain();

 private:
  void loop();
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> tasks_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace braid
