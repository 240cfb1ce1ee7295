// Hierarchical broadcast, for ranks on several hosts (as many on each): the root's host passes
// the message down its ring; then local rank j of the root's host sends slice j of it down the
// ring of its counterparts on the other hosts (all local ranks at once, each over its own
// connections); each other host puts its slices together with a ring allgather. Every host's
// link carries the message once, as a host-ordered ring does, but as l streams side by side,
// and the chain is (l-1) + (H-1) + (l-1) steps long instead of lH-1.
#include "algorithms/algorithm_registry.h"
#include "algorithms/broadcast_pipeline.h"
#include "algorithms/hierarchy.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{.name = "Hierarchical",
                              .cost = {.formula = CostFormula::kHierarchicalRing}};

class HierarchicalBroadcast : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kBroadcast && hierarchyApplies(ctx, /*allPairs=*/true);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    return withRollCall(ctx, args, [&] { return schedule(args, ctx); });
  }

 private:
  static ncclResult_t schedule(const CollArgs& args, Context& ctx) {
    const Team::Hosts& hosts = ctx.team.hosts;
    const int rootHost = hosts.hostOf[args.root], l = hosts.ranksPerHost;
    const std::vector<int>& rootLocals = hosts.ranksOf[rootHost];
    const int rootIndex = static_cast<int>(
        std::find(rootLocals.begin(), rootLocals.end(), args.root) - rootLocals.begin());
    const size_t es = args.elemSize;
    auto* out = static_cast<char*>(args.recvbuff);
    auto slice = [&](int j) {
      const Block b = blockOf(args.count, l, j);
      return Span{out + b.start * es, b.len};
    };
    const bool onRootHost = hosts.index == rootHost;
    // 1. The root's host: the whole message down its ring, from the root.
    if (onRootHost)
      BRAID_TRY(subRingBroadcast(ctx, args, hostLocalRing(hosts), rootIndex,
                                 static_cast<const char*>(args.sendbuff), out, args.count));
    // 2. This rank's slice down its counterparts' ring, from the root's host.
    const Span mine = slice(hosts.localIndex);
    BRAID_TRY(
        subRingBroadcast(ctx, args, counterpartRing(hosts), rootHost, mine.at, mine.at, mine.len));
    if (onRootHost) return ncclSuccess;
    // 3. The other hosts: every local rank holds its slice; the ring hands out the others.
    return subRingAllGather(
        ctx, args, hostLocalRing(hosts), 1, [&](int j, int) { return slice(j); },
        [&](int) { return static_cast<const char*>(mine.at); });
  }
};

}  // namespace

const Algorithm* hierarchicalBroadcast() {
  static HierarchicalBroadcast a;
  return &a;
}

}  // namespace braid
