// Ring reduce: partial results travel along the ring from the rank after the root to the root,
// each rank adding its contribution; the root applies the post-op (avg) and writes its output.
// Across hosts, a large message goes half up each of two rings (twoRingsPay).
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_schedules.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{
    .name = "Ring", .cost = sameOnEveryLink({0, 1, 0, 1, 1.0, 0, 0, false, {}, {}, true})};

class RingReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduce && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const auto* src = static_cast<const char*>(args.sendbuff);
    auto* dst = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize;
    if (!twoRingsPay(ctx, args.count * es))
      return subRingReduce(ctx, args, communicatorRing(ctx), args.root, src, dst, args.count);
    // Across hosts, the first half up the host-ordered ring's chain, the rest up the second
    // ring's (the output is only the root's: elsewhere it may be null).
    const size_t half = firstHalf(args.count);
    SubRingReduceSteps a(ctx, args, communicatorRing(ctx), args.root, src, dst, half);
    SubRingReduceSteps b(ctx, args, communicatorSecondRing(ctx), args.root, src + half * es,
                         offsetOrNull(dst, half, es), args.count - half);
    return runSideBySide(a, b);
  }
};

}  // namespace

const Algorithm* ringReduce() {
  static RingReduce a;
  return &a;
}

}  // namespace braid
