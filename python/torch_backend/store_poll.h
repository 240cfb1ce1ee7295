// Waiting on keys of the group's store. Always by polling check(), never by Store::wait(): a
// TCPStore client holds its lock through wait(), which would stall the point-to-point channels
// (peer_channels.h) that share the store meanwhile.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace braid_torch {

/// Sleeps between polls, growing from 1 to 10 ms.
class StorePoll {
 public:
  void pause() {
    std::this_thread::sleep_for(std::chrono::milliseconds(sleepMs_));
    sleepMs_ = std::min(10, sleepMs_ + 1);
  }

 private:
  int sleepMs_ = 1;
};

}  // namespace braid_torch
