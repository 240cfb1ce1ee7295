// Ring reduce-scatter: the first half of ring allreduce. Block b's partial sum starts at rank
// b+1 and travels the ring, each rank adding its contribution, until rank b finishes it (post-op
// applied) into its output. Across hosts, large blocks go half on each of two rings
// (ring_channels.h).
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_channels.h"

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
    // Each channel reduces its slice of every block.
    return runRingChannels(ctx, block * es, block, [&](const RingChannel& c) {
      return SubRingReduceScatterSteps(
          ctx, args, c.ring, 1,
          [&, c](int owner, int) {
            return ConstSpan{in + (owner * block + c.first) * es, c.count};
          },
          [&, c](int) { return out + c.first * es; });
    });
  }
};

}  // namespace

const Algorithm* ringReduceScatter() {
  static RingReduceScatter a;
  return &a;
}

}  // namespace braid
