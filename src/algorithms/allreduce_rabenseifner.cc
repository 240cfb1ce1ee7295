// Rabenseifner allreduce for mid sizes: a reduce-scatter then an allgather, each in ceil(log2 n)
// Bruck steps (recursive halving and doubling at powers of two; any rank count works). The count
// is split into n blocks differing by at most one element; each rank moves 2(n-1)/n of the data,
// like the ring, in 2 log2(n) steps instead of 2(n-1). Every block is reduced once, on its owner,
// and then copied, so all ranks receive bitwise-identical results.
#include <vector>

#include "algorithms/bruck.h"
#include "algorithms/registry.h"

namespace braid {
namespace {

class RabenseifnerAllReduce : public Algorithm {
 public:
  const char* name() const override { return "Rabenseifner"; }
  bool supports(const CollArgs& args, const ncclComm& comm) const override {
    return args.coll == CollType::kAllReduce && comm.nranks > 1 && allPairsConnected(comm);
  }
  ncclResult_t run(const CollArgs& args, ncclComm& comm) const override {
    if (args.count == 0) return ncclSuccess;
    const int n = comm.nranks;
    const size_t each = args.count / n, extra = args.count % n;
    std::vector<size_t> starts(n + 1);
    for (int b = 0; b <= n; b++) starts[b] = b * each + std::min(static_cast<size_t>(b), extra);
    BruckLayout layout(comm.rank, n, std::move(starts));
    thread_local std::vector<char> storage;
    char* acc = pageAlignedScratch(storage, layout.total() * args.elemSize);
    layout.rotateIn(args, args.sendbuff, acc, true);
    BRAID_TRY(runBruckReduceScatter(comm, args, layout, acc, acc));
    BRAID_TRY(runBruckAllGather(comm, args, layout, acc));
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
