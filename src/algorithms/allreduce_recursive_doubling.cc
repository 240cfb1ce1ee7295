// Recursive-doubling allreduce for small messages (MPI's choice for them): in step k every rank
// exchanges its partial result with the rank 2^k away and combines the two, so after log2(n)
// steps every rank holds the whole reduction. Each rank sends log2(n) messages instead of
// Direct's n-1, which is what a small message costs where every message is a system call and a
// wake-up (TCP), above all when ranks share cores. Where n is not a power of two, the first
// 2(n - p) ranks (p the power of two below n) pair up first: each odd one hands its term to the
// even one before it and gets the result back at the end.
//
// The two partners of a step combine the same two partial results, the lower half's first, so
// every rank computes the same expression and all outputs are bitwise identical.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "util/status.h"

namespace braid {
namespace {

// The ranks that take part in the doubling steps, numbered 0..p-1 ("virtual" ranks).
struct Doubling {
  int p = 1;      ///< the power of two <= n
  int extra = 0;  ///< n - p: ranks that fold into a partner first
  /// This rank's virtual rank, or -1 for an odd rank below 2*extra (it only folds).
  int virtualOf(int rank) const {
    if (rank < 2 * extra) return rank % 2 == 0 ? rank / 2 : -1;
    return rank - extra;
  }
  int rankOf(int v) const { return v < extra ? 2 * v : v + extra; }
};

Doubling doublingOf(int n) {
  Doubling d;
  while (d.p * 2 <= n) d.p *= 2;
  d.extra = n - d.p;
  return d;
}

ncclResult_t sendTerm(Context& ctx, const CollArgs& args, int to, const void* data, size_t bytes) {
  FifoSender& f = ctx.sendFifo(to);
  void* slot;
  BRAID_TRY(f.acquire(ctx.policy(), &slot));
  kernels::copy(slot, nullptr, data, bytes);
  f.post(slotInfo(static_cast<uint32_t>(bytes), args.fingerprint));
  return ncclSuccess;
}

// The whole message sent and reduced at each doubling step; past a power of two the model adds
// the fold-in and fold-out steps.
const AlgorithmTraits kTraits{
    .name = "RecursiveDoubling",
    .fewestRanks = 3,  // two ranks are Direct's
    .cost = {.shared = {0, 0, 1, 0.9, 0.95, 0, 0, true, kEachStep, kEachStep},
             .dedicated = CostShape{0, 0, 1, 0.30, 0.75, 0, 0, true, kEachStep, kEachStep},
             .tcp = CostShape{0, 0, 1, 0.94, 1.3, 0, 0, true, kEachStep, kEachStep},
             .foldsBeyondPowerOfTwo = true}};

class RecursiveDoublingAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  // At two ranks recursive doubling is Direct's one exchange: left to Direct.
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() >= kTraits.fewestRanks &&
           ctx.team.allPairsConnected();
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    // Messages larger than a slot go in slot-sized pieces, each doubled on its own.
    return forEachSlotPiece(args, ctx, [&](const void* in, void* out, size_t count) {
      return piece(args, ctx, in, out, count);
    });
  }

 private:
  static ncclResult_t piece(const CollArgs& args, Context& ctx, const void* in, void* out,
                            size_t count) {
    const int n = ctx.nranks(), me = ctx.rank();
    const size_t bytes = count * args.elemSize;
    const Doubling d = doublingOf(n);
    const int v = d.virtualOf(me);
    if (v < 0) {
      // An odd rank of the first pairs: its term to the even rank before it, the result back.
      thread_local std::vector<char> term;
      if (term.size() < bytes) term.resize(bytes);
      kernels::reduce(args.op, term.data(), nullptr, nullptr, in, count, kernels::kApplyPre);
      BRAID_TRY(sendTerm(ctx, args, me - 1, term.data(), bytes));
      const void* result;
      BRAID_TRY(waitForSlot(ctx, args, me - 1, bytes, &result));
      kernels::copy(out, nullptr, result, bytes);
      ctx.recvFifo(me - 1).release();
      return ncclSuccess;
    }
    // The partial result lives in scratch: the output may alias the input (in place).
    thread_local std::vector<char> scratch;
    if (scratch.size() < bytes) scratch.resize(bytes);
    void* acc = scratch.data();
    kernels::reduce(args.op, acc, nullptr, nullptr, in, count, kernels::kApplyPre);
    if (me < 2 * d.extra) {
      const void* theirs;
      BRAID_TRY(waitForSlot(ctx, args, me + 1, bytes, &theirs));
      kernels::reduce(args.op, acc, nullptr, acc, theirs, count, 0);
      ctx.recvFifo(me + 1).release();
    }
    for (int mask = 1; mask < d.p; mask <<= 1) {
      const int partner = d.rankOf(v ^ mask);
      BRAID_TRY(sendTerm(ctx, args, partner, acc, bytes));
      const void* theirs;
      BRAID_TRY(waitForSlot(ctx, args, partner, bytes, &theirs));
      const bool last = mask * 2 == d.p;
      void* dst = last ? out : acc;
      const void* lower = (v & mask) ? theirs : acc;
      const void* upper = (v & mask) ? acc : theirs;
      const unsigned flags = last ? kernels::kApplyPost : 0u;
      kernels::reduce(args.op, dst, nullptr, lower, upper, count, flags);
      ctx.recvFifo(partner).release();
    }
    if (me < 2 * d.extra) BRAID_TRY(sendTerm(ctx, args, me + 1, out, bytes));
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* recursiveDoublingAllReduce() {
  static RecursiveDoublingAllReduce a;
  return &a;
}

}  // namespace braid
