// Helpers several unit-test sources share (one copy each, so the sources also compile as one
// unity batch: cmake/BraidTest.cmake).
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>

#include "util/wait.h"

namespace braid::unit_test {

/// Whether the peer closes `fd` (or it fails) within `seconds`; data it sends is read and dropped.
inline bool closedByPeer(int fd, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[256];
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

/// ceil(log2 n) for n >= 1: a binary tree's depth bound.
inline int ceilLog2(int n) {
  int bits = 0;
  while ((1 << bits) < n) bits++;
  return bits;
}

/// A short spin and a deadline long enough for a loaded 2-core machine.
inline WaitPolicy testPolicy() {
  WaitPolicy p;
  p.spinIters = 100;
  p.timeoutS = 20;
  return p;
}

}  // namespace braid::unit_test
