// Rabenseifner allreduce for mid sizes: a reduce-scatter then an allgather, each in ceil(log2 n)
// steps. At a power of two, recursive halving and doubling in the output buffer
// (halving_doubling.h); at any other rank count, Bruck steps on a rotated copy. The count
// is split into n blocks differing by at most one element; each rank moves 2(n-1)/n of the data,
// like the ring, in 2 log2(n) steps instead of 2(n-1). Every block is reduced once, on its owner,
// and then copied, so all ranks receive bitwise-identical results.
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/bruck.h"
#include "algorithms/halving_doubling.h"

namespace braid {
namespace {

// Over TCP at a power of two it halves and doubles in the output, pieces lent
// (halving_doubling.h): fitted at 4 ranks on 2 cores, ahead of TwoShot and the ring from 128 KiB
// to 4 MiB (1.2 ms against their 1.55 at 1 MiB).
const AlgorithmTraits kTraits{.name = "Rabenseifner",
                              .cost = {.shared = {3, 1, 2, 0.46, 1.43},
                                       .dedicated = CostShape{3, 1, 2, 0.09, 1.27},
                                       .tcp = CostShape{1.5, 0, 2, 0.82, 1.04, 0.186},
                                       .tcpPowerOfTwo = CostShape{0, 0, 2, 0.9, 1.0}}};

class RabenseifnerAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() > 1 && ctx.team.allPairsConnected();
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    if (args.count == 0) return ncclSuccess;
    const int n = ctx.nranks();
    if (isPowerOfTwo(n)) return runHalvingDoubling(ctx, args);
    const size_t each = args.count / n, extra = args.count % n;
    std::vector<size_t> starts(n + 1);
    for (int b = 0; b <= n; b++) starts[b] = b * each + std::min(static_cast<size_t>(b), extra);
    BruckLayout layout(ctx.rank(), n, std::move(starts));
    thread_local std::vector<char> storage;
    char* acc = pageAlignedScratch(storage, layout.total() * args.elemSize);
    layout.rotateIn(args, args.sendbuff, acc, true);
    BRAID_TRY(runBruckReduceScatter(ctx, args, layout, acc, acc));
    BRAID_TRY(runBruckAllGather(ctx, args, layout, acc));
    layout.rotateOut(args, acc, args.recvbuff);
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* rabenseifnerAllReduce() {
  static RabenseifnerAllReduce a;
  return &a;
}

}  // namespace braid
