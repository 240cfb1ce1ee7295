// Hierarchical reduce, for ranks on several hosts (as many on each): a ring reduce-scatter
// within each host leaves local rank j with slice j summed over its host (in scratch); each
// local rank's slice then travels the chain of its counterparts to the root's host, summed on
// the way; there the root gathers the l finished slices. Every host but the root's sends the
// message over its link once, as a host-ordered ring does, but as l streams side by side.
#include <algorithm>
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/bruck.h"
#include "algorithms/hierarchy.h"

namespace braid {
namespace {

const AlgorithmTraits kTraits{.name = "Hierarchical",
                              .cost = {.formula = CostFormula::kHierarchicalRing}};

class HierarchicalReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  // The partial slices wait in host memory between the rings.
  bool movesDeviceMemory() const override { return false; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduce && hierarchyApplies(ctx, /*allPairs=*/true);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const Team::Hosts& hosts = ctx.team.hosts;
    const int rootHost = hosts.hostOf[args.root], l = hosts.ranksPerHost, me = hosts.localIndex;
    const size_t es = args.elemSize;
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const Block mine = blockOf(args.count, l, me);
    thread_local std::vector<char> storage;
    char* partial = pageAlignedScratch(storage, mine.len * es);

    // 1. Within the host: pre-op once, no post-op yet; slice j ends with local rank j.
    CollArgs local = args;
    local.op.postDiv = 1;
    BRAID_TRY(subRingReduceScatter(
        ctx, local, hostLocalRing(hosts), 1,
        [&](int j, int) {
          const Block b = blockOf(args.count, l, j);
          return ConstSpan{in + b.start * es, b.len};
        },
        [&](int) { return partial; }));
    // 2. Between hosts, to the root's host: the partial sums are this rank's contribution, the
    // post-op is applied there. The root's slice lands in its output, the others' in scratch.
    CollArgs total = args;
    total.op.preMul = false;
    const bool isRoot = ctx.rank() == args.root;
    char* finished = isRoot ? out + mine.start * es : partial;
    BRAID_TRY(
        subRingReduce(ctx, total, counterpartRing(hosts), rootHost, partial, finished, mine.len));
    if (hosts.index != rootHost) return ncclSuccess;
    // 3. The root's host: every local rank sends its finished slice to the root.
    const int root = args.root;
    if (!isRoot) {
      Primitives toRoot(ctx, total, {}, std::span<const int>(&root, 1));
      return sendAll(toRoot, partial, mine.len, es);
    }
    for (int j = 0; j < l; j++) {
      const int from = hosts.local[j];
      if (from == root) continue;
      const Block b = blockOf(args.count, l, j);
      Primitives fromPeer(ctx, total, std::span<const int>(&from, 1), {});
      for (size_t off = 0; off < b.len; off += fromPeer.maxElems())
        BRAID_TRY(
            fromPeer.recv(out + (b.start + off) * es, std::min(fromPeer.maxElems(), b.len - off)));
    }
    return ncclSuccess;
  }

 private:
  static ncclResult_t sendAll(Primitives& prims, const char* src, size_t len, size_t es) {
    for (size_t off = 0; off < len; off += prims.maxElems())
      BRAID_TRY(prims.copySend(src + off * es, std::min(prims.maxElems(), len - off)));
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* hierarchicalReduce() {
  static HierarchicalReduce a;
  return &a;
}

}  // namespace braid
