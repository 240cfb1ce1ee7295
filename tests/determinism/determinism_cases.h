// The determinism cases shared by the thread and process tests: float allreduce, reduce-scatter
// and reduce on real-valued inputs whose rounding depends on the order of the additions. Each
// rank runs every case several times on freshly poisoned outputs and reports one digest per
// case; a case whose repeats differ is a failure on that rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/rank_harness.h"
#include "nccl.h"

namespace braid::determinism {

enum class Coll { kAllReduce, kReduceScatter, kReduce };

struct Case {
  Coll coll;
  ncclDataType_t type;
  std::size_t count;  ///< allreduce/reduce: elements; reduce-scatter: each rank's block
  int root = 0;       ///< reduce only
  /// The report key of this case, e.g. "allreduce/float/100003".
  std::string key() const;
};

/// float, half and bfloat16; allreduce, reduce-scatter, reduce at roots 0 and last; counts
/// 1, a prime below one slot and a prime of many chunks at the tests' slot size.
std::vector<Case> standardCases(int nranks);

/// Runs every case `repeats` times on one communicator, the odd repeats in place; reports
/// "<key>" -> the output's digest (and "isa" -> the kernel variant the process uses). Fails the
/// rank when repeats differ.
void runCases(test::RankContext& ctx, const std::vector<Case>& cases, int repeats);

/// The slot size the tests run with, so that the large counts span many chunks.
inline constexpr const char* kSlotBytes = "16384";

}  // namespace braid::determinism
