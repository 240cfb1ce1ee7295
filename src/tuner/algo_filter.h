// NCCL_ALGO and NCCL_PROTO: which algorithms a user allows. NCCL_ALGO takes a list ("Tree",
// "ring,tree"), an exclusion ("^tree") or the per-collective form ("allreduce:tree;broadcast:
// ring"); NCCL_PROTO takes the same syntax over protocols (Simple, LL).
#pragma once

#include <string_view>

#include "algorithms/algorithm.h"

namespace braid {

/// The list `env` gives for collective `coll` ("" = no constraint).
std::string_view algoSpecFor(std::string_view env, CollType coll);
/// Whether `spec` (one collective's list) allows `name` (case-insensitive).
bool allowedBySpec(std::string_view spec, const char* name);
/// NCCL_PROTO's name for how `a` moves data, as its traits say: LowLatency is Braid's LL (data
/// and flag in one cache line); every other algorithm moves slots with a separate flag, NCCL's
/// Simple.
const char* protocolOf(const Algorithm* a);

}  // namespace braid
