// ncclCommRevoke and ncclCommShrink (NCCL 2.28; MPI ULFM's MPI_Comm_revoke/MPI_Comm_shrink).
//
// Revoke is local, as NCCL's is: it ends this rank's calls in progress on the communicator and
// refuses new ones (ncclInvalidUsage); peers learn nothing from it, so every rank revokes its own
// communicator (a peer blocked on this rank still ends through its liveness check or deadline).
//
// Shrink: the survivors (ranks not excluded) form a new communicator, ranks renumbered in order.
// The parent's bootstrap root may be dead (it lives in the process of rank 0 or of whoever made
// the id), so it is not used. Instead, over the parent's direct connections (where receivers
// skip whatever stale slots an interrupted operation left), every survivor tells the first
// survivor it is ready; once all have, the first survivor hosts a fresh id and posts it to each.
// See docs/shrink.md.
#pragma once

#include <vector>

#include "comm/communicator.h"

namespace braid {

/// Ends the communicator's calls in progress (and queued non-blocking work) and marks it revoked:
/// afterwards only shrink, abort and destroy are valid.
void commRevoke(ncclComm* comm);

/// Collective over the survivors of `parent`. `excluded` is sorted, unique, in range, and does
/// not contain parent->rank() (the API checks, and ends work in progress for NCCL_SHRINK_ABORT).
ncclResult_t commShrink(ncclComm* parent, const std::vector<int>& excluded,
                        const ncclConfig_t* config, ncclComm** out);

}  // namespace braid
