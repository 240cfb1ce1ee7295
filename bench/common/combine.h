// How per-rank numbers (times, error counts) are combined across threads and processes:
// nccl-tests' -a values 0..3, plus the sum used for error counts.
#pragma once

namespace braid::bench {

enum class Combine { kRank0 = 0, kAvg = 1, kMin = 2, kMax = 3, kSum = 4 };

}  // namespace braid::bench
