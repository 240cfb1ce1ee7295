// Logarithmic reduce-scatter for small messages: Bruck's allgather run backwards, ceil(log2 n)
// steps for any rank count instead of the ring's n-1. Each rank's contributions (pre-op applied)
// are rotated into a scratch buffer so that its own block comes first; partial results shrink
// towards relative block 0, which the last step finishes into the output.
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/bruck.h"

namespace braid {
namespace {

// log2(n) steps that move the blocks twice through scratch; it measured behind the ring even at
// 4 KiB.
const AlgorithmTraits kTraits{.name = "Bruck", .cost = sameOnEveryLink({4, 0, 1, 1, 2.0})};

class BruckReduceScatter : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduceScatter && ctx.nranks() > 1 &&
           ctx.team.allPairsConnected();
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    if (args.count == 0) return ncclSuccess;
    BruckLayout layout = BruckLayout::equalBlocks(ctx.rank(), ctx.nranks(), args.count);
    thread_local std::vector<char> storage;
    char* acc = pageAlignedScratch(storage, layout.total() * args.elemSize);
    layout.rotateIn(args, args.sendbuff, acc, true);
    return runBruckReduceScatter(ctx, args, layout, acc, args.recvbuff);
  }
};

}  // namespace

const Algorithm* bruckReduceScatter() {
  static BruckReduceScatter a;
  return &a;
}

}  // namespace braid
