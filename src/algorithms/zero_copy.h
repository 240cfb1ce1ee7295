// What the zero-copy algorithms share (allreduce_zerocopy.cc, allgather_zerocopy.cc,
// reducescatter_zerocopy.cc): between ranks of one host whose buffers are registered, each rank
// reads its peers' buffers where they are, and the FIFOs carry only small control slots.
// Registration is local, as in NCCL, so every such operation starts by exchanging descriptors of
// the buffers; all ranks decide from the same n descriptors whether all registered, and if not,
// all run the FIFO algorithm the selector would otherwise have chosen.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"

namespace braid {

/// Words every rank of a communicator reads and writes, in rank 0's shared memory: the
/// zero-copy allreduce hands out its chunks with them (allreduce_zerocopy.cc). Both counters
/// only grow, over all calls; a call's chunks are [OpCounters::sharedChunks, + its count).
struct SharedWork {
  alignas(64) std::atomic<uint64_t> claimed;  ///< chunks handed out
  /// Chunks finished plus ranks that finished mapping their peers' buffers (each call adds its
  /// chunks and n): mod 2^32, a futex word.
  alignas(64) std::atomic<uint32_t> done;
  std::atomic<uint32_t> sleepers;  ///< ranks asleep on `done`
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "SharedWork is shared by processes");

/// The zero-copy allreduce shares its chunks out (SharedWork) from this size up, and runs the
/// static schedule below it: measured beside a busy co-runner on 2 cores (all_reduce_perf -R 1,
/// BRAID_ZERO_COPY_SHARED=1 vs 0), sharing won at 25 and 64 MiB at 2 and 4 ranks, idle and busy,
/// and at 16 MiB but for 2 busy ranks (even), and lost at 4 MiB beside the busy co-runner.
constexpr size_t kZeroCopySharedMinBytes = 16 << 20;
/// The chunk a rank claims at a time: a reduced chunk is copied to the peers while it is in L2.
constexpr size_t kZeroCopyChunkBytes = 256 * 1024;

/// Where every rank's buffers are, in this process (index: rank; this rank's own included).
struct ZeroCopyView {
  bool usable = false;  ///< every rank registered both buffers, and every rank can map them
  std::vector<const char*> send, recv;
  std::vector<kernels::ReduceOp> ops;  ///< args.op with each rank's own PreMulSum scalar
  /// Rank 0's SharedWork, mapped here (nullptr where rank 0 could not share it).
  SharedWork* work = nullptr;
};

/// True for a call a zero-copy algorithm may take: more than one rank, every peer on this host
/// and connected, and `bytes` (the larger buffer) at least BRAID_ZERO_COPY_MIN_BYTES.
bool zeroCopyCandidate(const Context& ctx, size_t bytes);

/// After a descriptor round finds a buffer unregistered, this many collectives of the
/// communicator skip the round (zeroCopyExchange reports "not usable" at once, and the call
/// falls back to the FIFO algorithm the selector picks). The round costs a synchronisation of every
/// rank, which a program that never registers would otherwise pay on every large call
/// (docs/performance.md, "Zero-copy"); one that registers later waits at most this many calls
/// for ZeroCopy. The executor counts the calls down, the same on every rank.
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
