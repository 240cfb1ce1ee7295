// The ring allreduce's schedule (allreduce_ring.cc), for the ring of the whole communicator and
// for rings over some of its ranks (the hierarchical allreduce's rings between hosts).
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "algorithms/context.h"
#include "patterns/ring.h"

namespace braid {

/// Ring allreduce of `count` elements from `in` to `out` (in place when they are the same) over
/// a ring of `n` ranks: this rank receives from `prev` and sends to `next`, and `ring` names the
/// chunks (ring.chunkAt(step) in [0, n) for every step, the same labels on every member).
ncclResult_t ringAllReduceSchedule(Context& ctx, const CollArgs& args, const patterns::Ring& ring,
                                   int n, int prev, int next, const char* in, char* out,
                                   size_t count);

}  // namespace braid
