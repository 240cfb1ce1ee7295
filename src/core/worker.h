// A lazily started thread that runs tasks for one communicator. A group that spans several
// communicators (one thread driving every rank of ncclCommInitAll) hands each communicator's share
// to its worker so the ranks progress together instead of deadlocking on each other.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace braid {

class Worker {
 public:
  ~Worker();
  /// Queues `task`; it runs on the worker thread in submission order.
  void submit(std::function<void()> task);

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace braid
