// The sweep of Broadcast, Reduce, AllGather and ReduceScatter against exact expectations that
// several test programs run over their own transports and rank shapes (collectives_test.cc,
// tests/net_plugins): every dtype, the ops that apply, roots first/middle/last, counts
// 0/1/7/prime(/multi-chunk), in-place and out-of-place. Inputs are integers whose every partial
// result is exact in the dtype (the shared generator of verifiable/), so each element of each
// rank's output must equal the exact float64 expectation bit for bit.
#pragma once

#include "harness/rank_harness.h"
#include "nccl.h"
#include "oracle/case_buffer.h"

namespace braid::collectives {

/// Every case on `comm`. small: counts up to 1031 and sum only (else also 5000 and every op of
/// the reducing collectives). algorithm: what every call with data must have run (nullptr: any).
void sweepOn(test::RankContext& ctx, ncclComm_t comm, bool small, oracle::Registration registration,
             const char* algorithm);
/// sweepOn over a communicator of its own.
void sweep(test::RankContext& ctx, bool small,
           oracle::Registration registration = oracle::Registration::kNone);
/// The ops whose pre- and post-steps a schedule of several phases must apply exactly once:
/// int32 avg (the total divided once, truncated) and premulsum (the scalar once per rank), for
/// Reduce at every root and ReduceScatter, every element against the exact sum.
void preAndPostOps(test::RankContext& ctx, ncclComm_t comm);

}  // namespace braid::collectives
