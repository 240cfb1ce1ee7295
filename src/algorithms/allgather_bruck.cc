// Logarithmic allgather for small messages (Bruck): ceil(log2 n) steps for any rank count instead
// of the ring's n-1, each rank sending the blocks it has so far to the rank 2^k behind it. The
// blocks are gathered in rotated order in a scratch buffer and rotated into place at the end.
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/bruck.h"

namespace braid {
namespace {

// log2(n) steps that move the blocks twice through scratch.
const AlgorithmTraits kTraits{.name = "Bruck", .cost = sameOnEveryLink({0, 0, 1, 1, 2.0})};

class BruckAllGather : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllGather && ctx.nranks() > 1 && ctx.team.allPairsConnected();
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    if (args.count == 0) return ncclSuccess;
    BruckLayout layout = BruckLayout::equalBlocks(ctx.rank(), ctx.nranks(), args.count);
    thread_local std::vector<char> storage;
    char* rotated = pageAlignedScratch(storage, layout.total() * args.elemSize);
    // The rank's own block first (in place, sendbuff is that block of recvbuff: read it first).
    cachedCopy(rotated, args.sendbuff, args.count * args.elemSize);
    BRAID_TRY(runBruckAllGather(ctx, args, layout, rotated));
    layout.rotateOut(args, rotated, args.recvbuff);
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* bruckAllGather() {
  static BruckAllGather a;
  return &a;
}

}  // namespace braid
