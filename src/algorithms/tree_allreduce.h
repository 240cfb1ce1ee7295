// The double binary tree allreduce's schedule (allreduce_tree.cc), for the trees of the whole
// communicator and for trees over some of its ranks (the hierarchical allreduce's trees between
// hosts).
#pragma once

#include <cstddef>

#include "algorithms/algorithm.h"
#include "algorithms/context.h"
#include "patterns/tree.h"

namespace braid {

/// Double binary tree allreduce of `count` elements from `in` to `out` (in place when they are
/// the same): this rank's node in each tree (ranks as parent and children), tree 0 carrying the
/// first half of the elements and tree 1 the rest.
ncclResult_t treeAllReduceSchedule(Context& ctx, const CollArgs& args,
                                   const patterns::TreeNode node[2], const char* in, char* out,
                                   size_t count);

}  // namespace braid
