// Ring allgather: every rank's block travels n-1 hops around the ring; each rank copies a block
// into its place in the output while forwarding it. Blocks go in slot-sized pieces; across
// hosts, large blocks go half on each of two rings (ring_channels.h).
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_channels.h"

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
    // Each channel moves its slice of every block.
    return runRingChannels(ctx, block * es, block, [&](const RingChannel& c) {
      return SubRingAllGatherSteps(
          ctx, args, c.ring, 1,
          [&, c](int owner, int) {
            return Span{out + (owner * block + c.first) * es, c.count};
          },
          [&, c](int) { return in + c.first * es; });
    });
  }
};

}  // namespace

const Algorithm* ringAllGather() {
  static RingAllGather a;
  return &a;
}

}  // namespace braid
