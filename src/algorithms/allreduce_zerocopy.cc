// Zero-copy allreduce for large messages between ranks on one host whose buffers are registered
// (zero_copy.h). After the descriptor exchange, which also tells every rank that every input is
// ready, the work is shared out in chunks of kZeroCopyChunkBytes through rank 0's SharedWork words
// (from kZeroCopySharedMinBytes; smaller calls run the static schedule at the end of this note):
// a rank claims the next chunk, reduces it from every rank's send buffer in rank order 0..n-1
// (as Direct and TwoShot do) into its own receive buffer, copies the result into every peer's
// receive buffer, and counts the chunk done; it returns once every chunk of the call is done and
// every rank has mapped its peers' buffers.
//
// Why chunks and not one block per rank: a rank that is not running (a busy core, more ranks
// than cores) holds up nobody, since whoever runs takes its share; and nobody waits for a peer
// after the exchange except for chunks a peer has claimed and is still finishing, and for peers
// still mapping the buffers (done before they claim anything). Nor does the call end with a
// barrier: once every chunk is done no rank touches another's buffers. Each element is read once
// from every rank and written once to every rank: per call n reads and n writes of the message in
// all, against 2n reads and n writes for reduce-your-block then copy-the-others.
//
// In place is safe: a chunk is claimed by one rank, which reads every rank's input of it before
// writing any output of it (rank_order.h writes its destination in the last pass only).
//
// Below kZeroCopySharedMinBytes, and where rank 0 could not share its SharedWork (no memfd), the
// call runs the static schedule: rank j reduces block j into its receive buffer, a barrier, every
// rank copies the other blocks from their owners, a barrier.
#include <algorithm>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "algorithms/zero_copy.h"
#include "util/status.h"
#include "util/wait.h"

namespace braid {
namespace {

// Every peer's liveness in one check: a waiter for the last chunks does not know who holds them.
class AllPeers : public LivenessCheck {
 public:
  explicit AllPeers(Context& ctx) : ctx_(ctx) {}
  ncclResult_t check() override {
    for (int k = 0; k < ctx_.nranks(); k++) {
      if (k == ctx_.rank()) continue;
      if (LivenessCheck* peer = ctx_.sendFifo(k).liveness())
        if (ncclResult_t r = peer->check(); r != ncclSuccess) return r;
    }
    return ncclSuccess;
  }

 private:
  Context& ctx_;
};

// Adds one to `done`; wakes the sleepers when that completes the call.
void countDone(SharedWork& work, uint32_t target) {
  if (work.done.fetch_add(1, std::memory_order_acq_rel) + 1 == target)
    notify(WakeWord{&work.done, &work.sleepers});
}

ncclResult_t runShared(const CollArgs& args, Context& ctx, const ZeroCopyView& view) {
  const int n = ctx.nranks(), me = ctx.rank();
  const size_t es = args.elemSize;
  const size_t chunkElems = std::max<size_t>(64, (kZeroCopyChunkBytes / es) & ~size_t(63));
  const uint64_t chunks = (args.count + chunkElems - 1) / chunkElems;
  const uint64_t first = ctx.ops.sharedChunks, end = first + chunks;
  ctx.ops.sharedChunks = end;
  ctx.ops.sharedCalls++;
  // `done` counts every chunk and, per call, every rank once it has mapped its peers' buffers: a
  // rank that did all the chunks alone must not return (and free its buffers) before a slower
  // peer has mapped them.
  const uint32_t target = static_cast<uint32_t>(end + ctx.ops.sharedCalls * n);
  SharedWork& work = *view.work;
  countDone(work, target);
  char* mine = static_cast<char*>(args.recvbuff);
  uint64_t next = work.claimed.load(std::memory_order_relaxed);
  if (next < first)
    return fail(ncclInternalError,
                "AllReduce #%llu: the shared chunk counter is at %llu, below this call's first "
                "chunk %llu (an earlier call on the communicator failed part way)",
                static_cast<unsigned long long>(args.fingerprint.seq()),
                static_cast<unsigned long long>(next), static_cast<unsigned long long>(first));
  while (next < end) {
    if (!work.claimed.compare_exchange_weak(next, next + 1, std::memory_order_acq_rel,
                                            std::memory_order_relaxed))
      continue;
    const size_t start = (next - first) * chunkElems;
    const size_t len = std::min(chunkElems, args.count - start);
    zeroCopyReduce(view, args, start, len, mine + start * es);
    for (int i = 1; i < n; i++) {
      const int k = (me + i) % n;
      kernels::copy(const_cast<char*>(view.recv[k]) + start * es, nullptr, mine + start * es,
                    len * es);
    }
    countDone(work, target);
    next = work.claimed.load(std::memory_order_relaxed);
  }
  AllPeers peers(ctx);
  return waitUntil(
      ctx.policy(), WakeWord{&work.done, &work.sleepers},
      [&] { return static_cast<int32_t>(work.done.load(std::memory_order_acquire) - target) >= 0; },
      &peers, "AllReduce (ZeroCopy): waiting for the peers' chunks");
}

ncclResult_t runStatic(const CollArgs& args, Context& ctx, const ZeroCopyView& view) {
  const int n = ctx.nranks(), me = ctx.rank();
  const size_t es = args.elemSize;
  const Block mine = blockOf(args.count, n, me);
  zeroCopyReduce(view, args, mine.start, mine.len,
                 static_cast<char*>(args.recvbuff) + mine.start * es);
  BRAID_TRY(zeroCopyBarrier(ctx, args));
  for (int i = 1; i < n; i++) {
    const int k = (me + i) % n;
    const Block b = blockOf(args.count, n, k);
    kernels::copy(static_cast<char*>(args.recvbuff) + b.start * es, nullptr,
                  view.recv[k] + b.start * es, b.len * es);
  }
  return zeroCopyBarrier(ctx, args);
}

// Always preferred where it applies (registered buffers on one host); priced as a ring.
const AlgorithmTraits kTraits{
    .name = "ZeroCopy", .preference = Preference::kWhereverSupported, .cost = {}};

class ZeroCopyAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && zeroCopyCandidate(ctx, args.count * args.elemSize);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const size_t bytes = args.count * args.elemSize;
    ZeroCopyView view;
    BRAID_TRY(zeroCopyExchange(ctx, args, bytes, bytes, &view));
    if (!view.usable) return zeroCopyFallback(ctx, args, ringAllReduce());
    return view.work && bytes >= kZeroCopySharedMinBytes ? runShared(args, ctx, view)
                                                         : runStatic(args, ctx, view);
  }
};

}  // namespace

const Algorithm* zeroCopyAllReduce() {
  static ZeroCopyAllReduce a;
  return &a;
}

}  // namespace braid
