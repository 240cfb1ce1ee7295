// Hierarchical allgather, for ranks on several hosts (as many on each): each rank first gathers
// its counterparts' blocks (the ranks at its local index on every host) over a ring between the
// hosts, all local ranks at once; a ring within each host then hands every rank the other local
// ranks' gathered blocks. A host's link carries l (H-1) blocks each way for l ranks on each of H
// hosts, where a ring that visits each host's ranks in a row carries n-1 = lH-1 blocks through
// every host's one inbound hop; and the link carries them as l streams side by side.
#include "algorithms/algorithm_registry.h"
#include "algorithms/hierarchy.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{.name = "Hierarchical",
                              .cost = {.formula = CostFormula::kHierarchicalRing}};

class HierarchicalAllGather : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllGather && hierarchyApplies(ctx, /*allPairs=*/false);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const Team::Hosts& hosts = ctx.team.hosts;
    const size_t es = args.elemSize, c = args.count;
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    // Block of the rank at local index j on host g.
    auto blockAt = [&](int g, int j) {
      return Span{out + static_cast<size_t>(hosts.ranksOf[g][j]) * c * es, c};
    };
    // 1. Between hosts: member g of this rank's counterpart ring owns host g's block at this
    // rank's local index; this rank's own comes from its input.
    const int me = hosts.localIndex;
    BRAID_TRY(subRingAllGather(
        ctx, args, counterpartRing(hosts), 1, [&](int g, int) { return blockAt(g, me); },
        [&](int) { return in; }));
    // 2. Within the host: member j owns the H blocks at local index j, already in place.
    return subRingAllGather(
        ctx, args, hostLocalRing(hosts), hosts.count, [&](int j, int g) { return blockAt(g, j); },
        [&](int g) { return static_cast<const char*>(blockAt(g, me).at); });
  }
};

}  // namespace

const Algorithm* hierarchicalAllGather() {
  static HierarchicalAllGather a;
  return &a;
}

}  // namespace braid
