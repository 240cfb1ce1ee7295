// Combining every rank's contribution in rank order 0..n-1, as the one-shot, zero-copy and
// one-sided algorithms do: every rank (or whichever rank computes an element) evaluates the same
// expression, so every output is bitwise the same.
#pragma once

#include <cstddef>

#include "kernels/reduce.h"

namespace braid {

/// dst[i] = terms[0][i] (+) terms[1][i] (+) ... (+) terms[n-1][i] for i < count, each term with
/// its own rank's op (ops[k]: a PreMulSum scalar differs per rank), the post-op on the result.
/// dst may be one of the terms (each element is read before it is written). The terms combine
/// through an accumulator that stays in the L2 cache, so only the result goes out to memory.
void reduceInRankOrder(const kernels::ReduceOp* ops, const char* const* terms, int n,
                       size_t count, size_t elemSize, char* dst);

}  // namespace braid
