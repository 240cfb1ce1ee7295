// ncclCommSplit: ranks of a communicator that pass the same color form a new communicator,
// ordered by (key, old rank). The parent's bootstrap carries the (color, key) exchange and the
// new ids; each color's first rank hosts the new rendezvous.
#pragma once

#include "comm/communicator.h"

namespace braid {

/// Collective over `parent`. NCCL_SPLIT_NOCOLOR ranks take part and get *out = nullptr.
ncclResult_t commSplit(ncclComm* parent, int color, int key, ncclComm** out,
                       const ncclConfig_t* config);

}  // namespace braid
