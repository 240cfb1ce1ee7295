// Point-to-point transfers as one batch: every send and receive of a group (or of an alltoall,
// gather or scatter) progresses together, so any pattern (rings, pairs, a rank sending to
// itself, many peers at once) completes without deadlock. The k-th send from A to B matches the
// k-th receive on B from A; each carries a fingerprint of its sequence number and size, so
// mismatched counts fail with a message instead of corrupting data.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/context.h"
#include "nccl.h"

namespace braid {

/// One send or receive of a batch.
struct Transfer {
  bool isSend = false;
  int peer = -1;
  const char* src = nullptr;  ///< send
  char* dst = nullptr;        ///< receive
  size_t bytes = 0;
};

/// Runs the batch to completion (or to the first error, which names the peer). `device`: the
/// buffers are device memory moved through the P2P transport's device slots (Team::overP2p).
ncclResult_t runSendRecvBatch(Context& ctx, const std::vector<Transfer>& ops, bool device = false);

}  // namespace braid
