// Zero-copy allreduce for large messages between ranks on one host whose buffers are registered
// (zero_copy.h). After the descriptor exchange:
//   1. rank j reduces block j of all n send buffers, in rank order 0..n-1 (as Direct and TwoShot
//      do), straight into block j of its own receive buffer; then a barrier;
//   2. each rank copies block k of rank k's receive buffer into its own, for every k; then a
//      barrier, so no rank returns while a peer still reads from it.
// Per rank this reads 2 - 1/n and writes 1 message's worth, against the FIFO algorithms' extra
// copy into and out of every slot. In place is safe: in phase 1 rank j writes only block j, which
// no peer reads then; in phase 2 it overwrites the peers' blocks, which they finished reading.
#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "algorithms/zero_copy.h"
#include "util/status.h"

namespace braid {
namespace {

class ZeroCopyAllReduce : public Algorithm {
 public:
  const char* name() const override { return "ZeroCopy"; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && zeroCopyCandidate(ctx, args.count * args.elemSize);
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const int n = ctx.nranks(), me = ctx.rank();
    const size_t bytes = args.count * args.elemSize, es = args.elemSize;
    ZeroCopyView view;
    BRAID_TRY(zeroCopyExchange(ctx, args, bytes, bytes, &view));
    if (!view.usable) return zeroCopyFallback(ctx, args, ringAllReduce());
    const Block mine = blockOf(args.count, n, me);
    zeroCopyReduce(view, args, mine.start, mine.len,
                   static_cast<char*>(args.recvbuff) + mine.start * es);
    BRAID_TRY(zeroCopyBarrier(ctx, args));
    for (int i = 1; i < n; i++) {
      const int k = (me + i) % n;
      const Block b = blockOf(args.count, n, k);
      kernels::copy(static_cast<char*>(args.recvbuff) + b.start * es, nullptr,
                    view.recv[k] + b.start * es, b.len * es);
    }
    return zeroCopyBarrier(ctx, args);
  }
};

}  // namespace

const Algorithm* zeroCopyAllReduce() {
  static ZeroCopyAllReduce a;
  return &a;
}

}  // namespace braid
