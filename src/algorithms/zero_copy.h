// What the zero-copy algorithms share (allreduce_zerocopy.cc, allgather_zerocopy.cc,
// reducescatter_zerocopy.cc): between ranks of one host whose buffers are registered, each rank
// reads its peers' buffers where they are, and the FIFOs carry only small control slots.
// Registration is local, as in NCCL, so every such operation starts by exchanging descriptors of
// the buffers; all ranks decide from the same n descriptors whether all registered, and if not,
// all run the FIFO algorithm the selector would otherwise have chosen.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"

namespace braid {

/// Where every rank's buffers are, in this process (index: rank; this rank's own included).
struct ZeroCopyView {
  bool usable = false;  ///< every rank registered both buffers, and every rank can map them
  std::vector<const char*> send, recv;
  std::vector<kernels::ReduceOp> ops;  ///< args.op with each rank's own PreMulSum scalar
};

/// True for a call a zero-copy algorithm may take: more than one rank, every peer on this host
/// and connected, and `bytes` (the larger buffer) at least BRAID_ZERO_COPY_MIN_BYTES.
bool zeroCopyCandidate(const Context& ctx, size_t bytes);

/// After a descriptor round finds a buffer unregistered, this many collectives of the
/// communicator skip the round (zeroCopyExchange reports "not usable" at once, and the call
/// falls back to the FIFO algorithm the selector picks). The round costs a synchronisation of every
/// rank (1.12-1.25x at 1-16 MiB on 2-3 ranks of the 2-core VM), which a program that never
/// registers would otherwise pay on every large call; one that registers later waits at most
/// this many calls for ZeroCopy. The executor counts the calls down, the same on every rank.
constexpr uint32_t kZeroCopyQuietCalls = 16;

/// Sends every peer the descriptors of this rank's buffers and receives theirs; on success
/// `view` says whether all can be read in place, and where (never, without a round, during a
/// quiet period). The exchange also tells every rank
/// that its peers' inputs are ready.
ncclResult_t zeroCopyExchange(Context& ctx, const CollArgs& args, size_t sendBytes,
                              size_t recvBytes, ZeroCopyView* view);

/// dst[i] = the reduction, in rank order, of element first + i of every rank's send buffer, for
/// i < count (each rank's PreMulSum scalar on its own term; the post-op on the result). dst may
/// be this rank's own range of its send buffer (in place).
void zeroCopyReduce(const ZeroCopyView& view, const CollArgs& args, size_t first, size_t count,
                    char* dst);

/// Tells every peer this rank finished a phase, and waits until every peer has.
ncclResult_t zeroCopyBarrier(Context& ctx, const CollArgs& args);

/// Runs `args` with the algorithm the tuner ranks next (Context::fallback; `ring` when NCCL_ALGO
/// leaves nothing else): every rank reaches it together, so the schedules match.
ncclResult_t zeroCopyFallback(Context& ctx, const CollArgs& args, const Algorithm* ring);

}  // namespace braid
