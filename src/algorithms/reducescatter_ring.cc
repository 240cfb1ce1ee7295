// Ring reduce-scatter: the first half of ring allreduce. Block b's partial sum starts at rank
// b+1 and travels the ring, each rank adding its contribution, until rank b finishes it (post-op
// applied) into its output. Across hosts, large blocks go half on each of two rings
// (twoRingsPay).
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_schedules.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{.name = "Ring", .cost = sameOnEveryLink({0, 1, 0, 1, 1.0})};

class RingReduceScatter : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduceScatter && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t block = args.count, es = args.elemSize;
    if (!twoRingsPay(ctx, block * es))
      return subRingReduceScatter(
          ctx, args, communicatorRing(ctx), 1,
          [&](int owner, int) {
            return ConstSpan{in + owner * block * es, block};
          },
          [&](int) { return out; });
    // Across hosts, the first half of every block on the first ring, the rest on the second.
    const size_t half = firstHalf(block);
    auto firstSrc = [&](int owner, int) { return ConstSpan{in + owner * block * es, half}; };
    auto secondSrc = [&](int owner, int) {
      return ConstSpan{in + (owner * block + half) * es, block - half};
    };
    auto firstDst = [&](int) { return out; };
    auto secondDst = [&](int) { return out + half * es; };
    SubRingReduceScatterSteps a(ctx, args, communicatorRing(ctx), 1, firstSrc, firstDst);
    SubRingReduceScatterSteps b(ctx, args, communicatorSecondRing(ctx), 1, secondSrc, secondDst);
    return runSideBySide(a, b);
  }
};

}  // namespace

const Algorithm* ringReduceScatter() {
  static RingReduceScatter a;
  return &a;
}

}  // namespace braid
