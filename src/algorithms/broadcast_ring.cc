// Ring broadcast: the root's data flows around the ring starting at the root, in slot-sized
// chunks, each rank copying a chunk into its output while forwarding it (one pass).

#include "algorithms/algorithm_registry.h"
#include "algorithms/broadcast_pipeline.h"
#include "patterns/ring.h"

namespace braid {
namespace {

class RingBroadcast : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kBroadcast && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const patterns::Ring ring = ctx.team.ring();
    int prev = ring.prev(), next = ring.next();
    const bool isRoot = ctx.rank() == args.root;
    const bool isLast = next == args.root;  // the end of the chain sends nothing on
    Primitives prims(ctx, args, std::span<const int>(&prev, isRoot ? 0 : 1),
                     std::span<const int>(&next, isLast ? 0 : 1));
    BroadcastRole role = isRoot   ? BroadcastRole::kRoot
                         : isLast ? BroadcastRole::kLeaf
                                  : BroadcastRole::kInner;
    return broadcastWithRollCall(ctx, args, prims, role);
  }
};

}  // namespace

const Algorithm* ringBroadcast() {
  static RingBroadcast a;
  return &a;
}

}  // namespace braid
