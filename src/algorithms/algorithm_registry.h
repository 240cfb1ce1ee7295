// The algorithms of each collective: one registration line each in algorithm_registry.cc.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"

namespace braid {

const Algorithm* selfCollective();
const Algorithm* ringAllReduce();
const Algorithm* treeAllReduce();
const Algorithm* directAllReduce();
const Algorithm* lowLatencyAllReduce();
const Algorithm* hierarchicalAllReduce();
const Algorithm* hierarchicalTreeAllReduce();
const Algorithm* hierarchicalBroadcast();
const Algorithm* hierarchicalReduce();
const Algorithm* hierarchicalAllGather();
const Algorithm* hierarchicalReduceScatter();
const Algorithm* twoShotAllReduce();
const Algorithm* rabenseifnerAllReduce();
const Algorithm* recursiveDoublingAllReduce();
const Algorithm* zeroCopyAllReduce();
const Algorithm* zeroCopyAllGather();
const Algorithm* zeroCopyReduceScatter();
const Algorithm* ringBroadcast();
const Algorithm* treeBroadcast();
const Algorithm* ringReduce();
const Algorithm* ringAllGather();
const Algorithm* bruckAllGather();
const Algorithm* ringReduceScatter();
const Algorithm* bruckReduceScatter();

/// The registered algorithms of a collective, in default preference order (the tuner's ties).
const std::vector<const Algorithm*>& algorithmsFor(CollType coll);

/// The algorithm of `coll` whose name is `name` (case-insensitive, as NCCL_ALGO reads it), or
/// nullptr.
const Algorithm* findAlgorithm(CollType coll, std::string_view name);

/// A small number naming an algorithm in fingerprints (the same on every rank: the registry's
/// order of first appearance; 0 for a name no collective registers).
uint64_t algorithmId(std::string_view name);
/// The name behind algorithmId's number ("" for 0 or an unknown number).
const char* algorithmNameOf(uint64_t id);

}  // namespace braid
