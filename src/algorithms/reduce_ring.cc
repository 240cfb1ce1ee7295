// Ring reduce: partial results travel along the ring from the rank after the root to the root,
// each rank adding its contribution; the root applies the post-op (avg) and writes its output.
// Across hosts, a large message goes half up each of two rings (ring_channels.h).
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_channels.h"

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
    // Each channel's slice up its ring's chain (the output is only the root's: elsewhere it
    // may be null).
    return runRingChannels(ctx, args.count * es, args.count, [&](const RingChannel& c) {
      return SubRingReduceSteps(ctx, args, c.ring, args.root, src + c.first * es,
                                offsetOrNull(dst, c.first, es), c.count);
    });
  }
};

}  // namespace

const Algorithm* ringReduce() {
  static RingReduce a;
  return &a;
}

}  // namespace braid
