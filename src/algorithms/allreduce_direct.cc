// One-shot ("direct") allreduce for small messages: every rank posts its contribution (pre-op
// applied) to every peer in one step, then reduces the n contributions itself. One hop instead of
// the ring's 2(n-1) or the tree's 2 log2(n), at the price of n-1 sends per rank, so it wins while a
// message is latency-bound. Each rank combines the contributions in rank order 0..n-1, so every
// rank computes the same expression and all outputs are bitwise identical.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "util/status.h"

namespace braid {
namespace {

// A core per rank, its steps cost a fifth of alpha (fitted with the ring's: see
// allreduce_ring.cc). More ranks than cores, its one step waits on all peers at once and costs
// less than the ring's chain; the bytes factor is fitted to the choices: Direct to 32 KiB at
// 3 ranks and 16 KiB at 4.
const AlgorithmTraits kTraits{
    .name = "Direct",
    .cost = {.shared = {1, 0.5, 0, 0.69, 0.61, 0, 0, true, kToEveryPeer, kToEveryPeer},
             .dedicated = CostShape{1, 0.5, 0, 0.19, 0.72, 0, 0, true, kToEveryPeer, kToEveryPeer},
             .tcp = CostShape{1, 0.5, 0, 0.94, 1.05, 0.029, 0, true, kToEveryPeer, kToEveryPeer}}};

class DirectAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() > 1 && ctx.team.allPairsConnected();
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    // Messages larger than a slot go in slot-sized pieces, each a one-shot of its own.
    return forEachSlotPiece(args, ctx, [&](const void* in, void* out, size_t count) {
      return oneShot(args, ctx, in, out, count);
    });
  }

 private:
  static ncclResult_t oneShot(const CollArgs& args, Context& ctx, const void* in, void* out,
                              size_t count) {
    const int n = ctx.nranks(), me = ctx.rank();
    const size_t bytes = count * args.elemSize;
    // Post pre(x) to every peer. This rank's own term is kept in a scratch buffer: the output
    // may alias the input (in place), and a send slot cannot serve, since the peer owning that
    // FIFO may tear it down as soon as it has read the slot.
    thread_local std::vector<char> scratch;
    if (scratch.size() < bytes) scratch.resize(bytes);
    const void* own = scratch.data();
    kernels::reduce(args.op, scratch.data(), nullptr, nullptr, in, count, kernels::kApplyPre);
    for (int i = 1; i < n; i++) {
      FifoSender& f = ctx.sendFifo((me + i) % n);
      void* slot;
      BRAID_TRY(f.acquire(ctx.policy(), &slot));
      kernels::copy(slot, nullptr, own, bytes);
      f.post(slotInfo(static_cast<uint32_t>(bytes), args.fingerprint));
    }
    // Combine in rank order, each peer's slot as it arrives. A slot is released once it has been
    // read (the first term's only after the second is combined with it).
    const void* acc = nullptr;
    FifoReceiver* firstFrom = nullptr;
    for (int k = 0; k < n; k++) {
      const void* term = own;
      FifoReceiver* from = k == me ? nullptr : &ctx.recvFifo(k);
      if (from) BRAID_TRY(waitForSlot(ctx, args, k, bytes, &term));
      if (!acc) {
        acc = term;  // the first term: combined with the second one next
        firstFrom = from;
        continue;
      }
      unsigned flags = k == n - 1 ? kernels::kApplyPost : 0u;
      kernels::reduce(args.op, out, nullptr, acc, term, count, flags);
      acc = out;
      if (firstFrom) firstFrom->release();
      firstFrom = nullptr;
      if (from) from->release();
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* directAllReduce() {
  static DirectAllReduce a;
  return &a;
}

}  // namespace braid
