// Rabenseifner's allreduce at a power of two: reduce-scatter by recursive halving, allgather by
// recursive doubling, in the output buffer (halving_doubling.cc). Every block is reduced once,
// on its owner (the lower rank's partial result first in each step), so all ranks get the same
// bits.
#pragma once

#include "algorithms/algorithm.h"

namespace braid {

bool isPowerOfTwo(int n);
/// The whole allreduce on `ctx` (n a power of two, n >= 2, all pairs 2^k apart connected).
ncclResult_t runHalvingDoubling(Context& ctx, const CollArgs& args);

}  // namespace braid
