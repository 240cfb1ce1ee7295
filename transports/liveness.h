// Liveness of a peer process on this host: alive while its pid exists with the same start time
// (so a reused pid is not mistaken for the peer).
#pragma once

#include <cstdint>

#include "util/wait.h"

namespace braid {

/// Start time of a process (clock ticks since boot, field 22 of /proc/pid/stat); 0 if unknown.
uint64_t processStartTime(int pid);

class PidLiveness : public LivenessCheck {
 public:
  PidLiveness(int pid, uint64_t startTime, int rank)
      : pid_(pid), startTime_(startTime), rank_(rank) {}
  ncclResult_t check() override;
  int peerRank() const override { return rank_; }

 private:
  int pid_;
  uint64_t startTime_;
  int rank_;
};

}  // namespace braid
