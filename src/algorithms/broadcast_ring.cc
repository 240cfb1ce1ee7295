// Ring broadcast: the root's data flows around the ring starting at the root, in slot-sized
// chunks, each rank copying a chunk into its output while forwarding it (one pass). Across
// hosts, a large message goes half down each of two rings (ring_channels.h).

#include "algorithms/algorithm_registry.h"
#include "algorithms/broadcast_pipeline.h"
#include "algorithms/ring_channels.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{
    .name = "Ring", .cost = sameOnEveryLink({0, 1, 0, 1, 1.0, 0, 0, false, {}, {}, true})};

class RingBroadcast : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kBroadcast && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const auto* src = static_cast<const char*>(args.sendbuff);
    auto* dst = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize;
    return withRollCall(ctx, args, [&]() -> ncclResult_t {
      // Each channel's slice down its ring's chain (the input is only the root's: elsewhere
      // it may be null).
      return runRingChannels(ctx, args.count * es, args.count, [&](const RingChannel& c) {
        return SubRingBroadcastSteps(ctx, args, c.ring, args.root, offsetOrNull(src, c.first, es),
                                     dst + c.first * es, c.count);
      });
    });
  }
};

}  // namespace

const Algorithm* ringBroadcast() {
  static RingBroadcast a;
  return &a;
}

}  // namespace braid
