// Tree broadcast for small messages: a binary tree over the ranks renumbered relative to the
// root (relative rank v has children 2v+1 and 2v+2), pipelined in slot-sized chunks; each rank
// copies a chunk into its output while forwarding it to its children in one pass. Depth
// floor(log2 n) instead of the ring's n-1 hops, so latency grows with log2(n).

#include "algorithms/algorithm_registry.h"
#include "algorithms/broadcast_pipeline.h"

namespace braid {
namespace {

// floor(log2 n) deep, the root's message passed on twice at every inner rank.
const AlgorithmTraits kTraits{
    .name = "Tree", .cost = sameOnEveryLink({0, 0, 0, 1, 1.0, 0, 1, true, kTwiceMessage, {}})};

class TreeBroadcast : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    // Tree edges join arbitrary pairs; the answer must be the same on every rank, so it asks
    // for every pair (BRAID_CONNECT=neighbours connects only ring and double-tree neighbours).
    return args.coll == CollType::kBroadcast && ctx.nranks() > 1 && ctx.team.allPairsConnected();
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const int n = ctx.nranks();
    const int v = (ctx.rank() - args.root + n) % n;
    auto absolute = [&](int rel) { return (rel + args.root) % n; };
    int parent = v == 0 ? -1 : absolute((v - 1) / 2);
    int children[2] = {2 * v + 1 < n ? absolute(2 * v + 1) : -1,
                       2 * v + 2 < n ? absolute(2 * v + 2) : -1};
    Primitives prims(ctx, args, std::span<const int>(&parent, 1), children);
    BroadcastRole role = v == 0            ? BroadcastRole::kRoot
                         : children[0] < 0 ? BroadcastRole::kLeaf
                                           : BroadcastRole::kInner;
    return broadcastWithRollCall(ctx, args, prims, role);
  }
};

}  // namespace

const Algorithm* treeBroadcast() {
  static TreeBroadcast a;
  return &a;
}

}  // namespace braid
