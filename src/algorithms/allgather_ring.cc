// Ring allgather: every rank's block travels n-1 hops around the ring; each rank copies a block
// into its place in the output while forwarding it. Blocks go in slot-sized pieces; across
// hosts, large blocks go half on each of two rings (twoRingsPay).
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_schedules.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{.name = "Ring", .cost = sameOnEveryLink({0, 1, 0, 1, 1.0})};

class RingAllGather : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllGather && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    auto* out = static_cast<char*>(args.recvbuff);
    const auto* in = static_cast<const char*>(args.sendbuff);
    const size_t block = args.count, es = args.elemSize;
    if (!twoRingsPay(ctx, block * es))
      return subRingAllGather(
          ctx, args, communicatorRing(ctx), 1,
          [&](int owner, int) {
            return Span{out + owner * block * es, block};
          },
          [&](int) { return in; });
    // Across hosts, the first half of every block on the first ring, the rest on the second.
    const size_t half = firstHalf(block);
    auto firstWhere = [&](int owner, int) { return Span{out + owner * block * es, half}; };
    auto secondWhere = [&](int owner, int) {
      return Span{out + (owner * block + half) * es, block - half};
    };
    auto firstOwn = [&](int) { return in; };
    auto secondOwn = [&](int) { return in + half * es; };
    SubRingAllGatherSteps a(ctx, args, communicatorRing(ctx), 1, firstWhere, firstOwn);
    SubRingAllGatherSteps b(ctx, args, communicatorSecondRing(ctx), 1, secondWhere, secondOwn);
    return runSideBySide(a, b);
  }
};

}  // namespace

const Algorithm* ringAllGather() {
  static RingAllGather a;
  return &a;
}

}  // namespace braid
