// Hierarchical allreduce, for ranks on several hosts (as many on each): a ring reduce-scatter
// among the ranks of each host leaves rank i of the host with block i summed over its host; the
// ranks holding block i on every host all-reduce it over a ring between hosts (all the hosts'
// local ranks at once, each over its own connections); a ring allgather within each host then
// gives every rank every block. Each host's network link carries 2(H-1)/H of the message for H
// hosts, where even a ring that visits each host's ranks in a row carries 2(n-1)/n for n ranks,
// and the steps within a host run over shared memory.
#include "algorithms/algorithm_registry.h"
#include "algorithms/hierarchy.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/tree_allreduce.h"

namespace braid {
namespace {

const AlgorithmTraits kRingBetweenHosts{.name = "Hierarchical",
                                        .cost = {.formula = CostFormula::kHierarchicalRing}};
const AlgorithmTraits kTreeBetweenHosts{.name = "HierarchicalTree",
                                        .cost = {.formula = CostFormula::kHierarchicalTree}};

// Between hosts a ring (Hierarchical) or, for many hosts, a double binary tree over the hosts
// (HierarchicalTree): 2 log2(H) steps across the network instead of the ring's 2(H-1).
class HierarchicalAllReduce : public Algorithm {
 public:
  explicit HierarchicalAllReduce(bool treeBetweenHosts) : tree_(treeBetweenHosts) {}
  const AlgorithmTraits& traits() const override {
    return tree_ ? kTreeBetweenHosts : kRingBetweenHosts;
  }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && hierarchyApplies(ctx, /*allPairs=*/false);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const Team::Hosts& hosts = ctx.team.hosts;
    const int l = hosts.ranksPerHost, me = hosts.localIndex;
    const size_t es = args.elemSize;
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const Block mine = blockOf(args.count, l, me);
    const SubRing local = hostLocalRing(hosts);

    // 1. Reduce-scatter within the host: every rank's pre-op (premulsum) once, no post-op yet
    // (avg divides the total, once, at the end of step 2). Block j ends in rank j's output.
    CollArgs partial = args;
    partial.op.postDiv = 1;
    BRAID_TRY(subRingReduceScatter(
        ctx, partial, local, 1,
        [&](int j, int) {
          const Block b = blockOf(args.count, l, j);
          return ConstSpan{in + b.start * es, b.len};
        },
        [&](int) { return out + mine.start * es; }));

    // 2. Block `me` all-reduced among the hosts, in place: the partial sums are this rank's
    // contribution now (their pre-op is applied), the post-op comes last.
    CollArgs total = args;
    total.op.preMul = false;
    char* slice = out + mine.start * es;
    if (tree_) {
      const patterns::TreeNode node[2] = {counterpartTree(hosts, 0), counterpartTree(hosts, 1)};
      BRAID_TRY(treeAllReduceSchedule(ctx, total, node, slice, slice, mine.len));
    } else {
      const SubRing across = counterpartRing(hosts);
      BRAID_TRY(ringAllReduceSchedule(ctx, total, across.ring, across.members, across.prev,
                                      across.next, slice, slice, mine.len));
    }

    // 3. Allgather within the host: each block travels the host's ring from its owner.
    return subRingAllGather(
        ctx, args, local, 1,
        [&](int j, int) {
          const Block b = blockOf(args.count, l, j);
          return Span{out + b.start * es, b.len};
        },
        [&](int) { return static_cast<const char*>(out + mine.start * es); });
  }

 private:
  bool tree_;
};

}  // namespace

const Algorithm* hierarchicalAllReduce() {
  static HierarchicalAllReduce a(false);
  return &a;
}

const Algorithm* hierarchicalTreeAllReduce() {
  static HierarchicalAllReduce a(true);
  return &a;
}

}  // namespace braid
