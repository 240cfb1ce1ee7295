// What the device tests share: each rank's input values (small, so int32 sums stay exact) and
// the harness options (a 20 s communicator timeout inside a 90 s run limit).
#pragma once

#include <cstddef>
#include <cstdint>

#include "harness/rank_harness.h"

namespace braid::test {

inline int32_t deviceTestInput(int rank, size_t i) {
  return static_cast<int32_t>((i * 7919 + static_cast<size_t>(rank) * 104729) % 2001) - 1000;
}

inline RunOptions deviceTestOptions() {
  RunOptions o;
  o.timeoutS = 90;
  o.env = {{"BRAID_TIMEOUT_S", "20"}};
  return o;
}

}  // namespace braid::test
