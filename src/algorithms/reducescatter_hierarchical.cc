// Hierarchical reduce-scatter, for ranks on several hosts (as many on each): a ring within each
// host sums, for every local index j, the blocks of the ranks at index j on every host, leaving
// those H partial blocks with local rank j (in scratch); a ring between each rank's counterparts
// then finishes them, block g on host g. The transpose of the hierarchical allgather: a host's
// link carries l (H-1) blocks each way, as l streams, where a host-ordered ring carries lH-1.
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/bruck.h"
#include "algorithms/hierarchy.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{.name = "Hierarchical",
                              .cost = {.formula = CostFormula::kHierarchicalRing}};

class HierarchicalReduceScatter : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  // The partial blocks wait in host memory between the two rings.
  bool movesDeviceMemory() const override { return false; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduceScatter && hierarchyApplies(ctx, /*allPairs=*/false);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const Team::Hosts& hosts = ctx.team.hosts;
    const size_t es = args.elemSize, c = args.count;
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    thread_local std::vector<char> storage;
    char* partial = pageAlignedScratch(storage, hosts.count * c * es);
    auto partialOf = [&](int g) { return partial + static_cast<size_t>(g) * c * es; };

    // 1. Within the host, every rank's pre-op (premulsum) once, no post-op yet (avg divides the
    // total, once, at the end of step 2): member j ends with its H blocks summed over the host.
    CollArgs local = args;
    local.op.postDiv = 1;
    BRAID_TRY(subRingReduceScatter(
        ctx, local, hostLocalRing(hosts), hosts.count,
        [&](int j, int g) {
          return ConstSpan{in + static_cast<size_t>(hosts.ranksOf[g][j]) * c * es, c};
        },
        partialOf));
    // 2. Between hosts: the partial sums are this rank's contribution (pre-op applied), the
    // post-op comes last; member g's block is host g's.
    CollArgs total = args;
    total.op.preMul = false;
    return subRingReduceScatter(
        ctx, total, counterpartRing(hosts), 1,
        [&](int g, int) {
          return Span{partialOf(g), c};
        },
        [&](int) { return out; });
  }
};

}  // namespace

const Algorithm* hierarchicalReduceScatter() {
  static HierarchicalReduceScatter a;
  return &a;
}

}  // namespace braid
