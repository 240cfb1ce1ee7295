// Two-shot direct allreduce for mid-sized messages: a reduce-scatter then an allgather, each in
// one hop through the peers' FIFOs. Rank j owns block j of the message: every rank posts block j
// of its contribution (pre-op applied) to rank j, each rank combines the n terms of its own block,
// then posts the final block to every peer. Two hops instead of one-shot's one, but each rank
// sends 2(n-1)/n of the message instead of n-1 times it, and reduces 1/n of it instead of all of
// it. The terms of a block are combined in rank order 0..n-1, the same expression one-shot uses,
// so the outputs are bitwise identical on every rank and to one-shot's.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "util/status.h"

namespace braid {
namespace {

// At 2 ranks TwoShot is the ring with a scratch copy more: a core per rank, its bytes factor
// keeps it behind both the ring and Direct there. More ranks than cores it is fitted to the
// choices: to 256 KiB at 3 and 4 ranks, the ring beyond.
const AlgorithmTraits kTraits{.name = "TwoShot",
                              .cost = {.shared = {1.875, 0.625, 0, 0.78, 0.78},
                                       .dedicated = CostShape{1.875, 0.625, 0, 0.17, 0.95},
                                       .tcp = CostShape{0, 2, 0, 0.92, 1.19, -0.063}}};

class TwoShotAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() > 1 && ctx.team.allPairsConnected();
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    // Each round moves one slot of data per peer and phase: n slots' worth of the message.
    size_t perSlot = (ctx.config.slotBytes / args.elemSize) & ~size_t(63);
    if (perSlot == 0) perSlot = ctx.config.slotBytes / args.elemSize;
    const size_t step = perSlot * ctx.nranks(), es = args.elemSize;
    for (size_t off = 0; off < args.count; off += step) {
      size_t n = std::min(step, args.count - off);
      BRAID_TRY(twoShot(args, ctx, static_cast<const char*>(args.sendbuff) + off * es,
                        static_cast<char*>(args.recvbuff) + off * es, n));
    }
    return ncclSuccess;
  }

 private:
  static ncclResult_t post(Context& ctx, const CollArgs& args, int to, const void* src,
                           size_t count, bool applyPre) {
    FifoSender& f = ctx.sendFifo(to);
    void* slot;
    BRAID_TRY(f.acquire(ctx.policy(), &slot));
    if (applyPre)
      kernels::reduce(args.op, slot, nullptr, nullptr, src, count, kernels::kApplyPre);
    else
      kernels::copy(slot, nullptr, src, count * args.elemSize);
    f.post(slotInfo(static_cast<uint32_t>(count * args.elemSize), args.fingerprint));
    return ncclSuccess;
  }

  static ncclResult_t twoShot(const CollArgs& args, Context& ctx, const char* in, char* out,
                              size_t count) {
    const int n = ctx.nranks(), me = ctx.rank();
    const size_t es = args.elemSize;
    const Block mine = blockOf(count, n, me);
    // This rank's own term, pre-op applied, kept aside: the output may alias the input.
    thread_local std::vector<char> scratch;
    if (scratch.size() < mine.len * es + 1) scratch.resize(mine.len * es + 1);
    kernels::reduce(args.op, scratch.data(), nullptr, nullptr, in + mine.start * es, mine.len,
                    kernels::kApplyPre);
    // Shot 1: block j of this rank's contribution to rank j.
    for (int i = 1; i < n; i++) {
      const int to = (me + i) % n;
      const Block b = blockOf(count, n, to);
      BRAID_TRY(post(ctx, args, to, in + b.start * es, b.len, true));
    }
    // Combine this rank's block in rank order; a slot is released once it has been read.
    char* result = out + mine.start * es;
    const void* acc = nullptr;
    FifoReceiver* accFrom = nullptr;
    for (int k = 0; k < n; k++) {
      const void* term = scratch.data();
      FifoReceiver* from = nullptr;
      if (k != me) {
        BRAID_TRY(waitForSlot(ctx, args, k, mine.len * es, &term));
        from = &ctx.recvFifo(k);
      }
      if (!acc) {
        acc = term;
        accFrom = from;
        continue;
      }
      kernels::reduce(args.op, result, nullptr, acc, term, mine.len,
                      k == n - 1 ? kernels::kApplyPost : 0u);
      acc = result;
      if (accFrom) accFrom->release();
      accFrom = nullptr;
      if (from) from->release();
    }
    // Shot 2: the final block to every peer, theirs into the output.
    for (int i = 1; i < n; i++) BRAID_TRY(post(ctx, args, (me + i) % n, result, mine.len, false));
    for (int i = 1; i < n; i++) {
      const int from = (me + n - i) % n;
      const Block b = blockOf(count, n, from);
      const void* data;
      BRAID_TRY(waitForSlot(ctx, args, from, b.len * es, &data));
      kernels::copy(out + b.start * es, nullptr, data, b.len * es);
      ctx.recvFifo(from).release();
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* twoShotAllReduce() {
  static TwoShotAllReduce a;
  return &a;
}

}  // namespace braid
