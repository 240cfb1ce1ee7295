// Algorithm registration: one line per algorithm in registry.cc.
#pragma once

#include "algorithms/algorithm.h"

namespace braid {

const Algorithm* selfCollective();
const Algorithm* ringAllReduce();
const Algorithm* treeAllReduce();
const Algorithm* directAllReduce();
const Algorithm* lowLatencyAllReduce();
const Algorithm* twoShotAllReduce();
const Algorithm* rabenseifnerAllReduce();
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

}  // namespace braid
