// Zero-copy reduce-scatter between ranks on one host whose buffers are registered
// (zero_copy.h): after the descriptor exchange rank j reduces block j of every rank's input, in
// rank order, straight into its output; a barrier then keeps the inputs alive until all have
// read them. Per rank: one block read from each rank, the output written once, no slot traffic.
// In place (output = block j of rank j's input) is safe: no peer reads block j of rank j.
#include "algorithms/algorithm_registry.h"
#include "algorithms/zero_copy.h"
#include "util/status.h"

namespace braid {
namespace {

// Always preferred where it applies (registered buffers on one host); priced as a ring.
const AlgorithmTraits kTraits{
    .name = "ZeroCopy", .preference = Preference::kWhereverSupported, .cost = {}};

class ZeroCopyReduceScatter : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduceScatter &&
           zeroCopyCandidate(ctx, args.count * args.elemSize * ctx.nranks());
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    ZeroCopyView view;
    BRAID_TRY(zeroCopyExchange(ctx, args, args.count * args.elemSize * ctx.nranks(), 0, &view));
    if (!view.usable) return zeroCopyFallback(ctx, args, ringReduceScatter());
    zeroCopyReduce(view, args, args.count * ctx.rank(), args.count,
                   static_cast<char*>(args.recvbuff));
    return zeroCopyBarrier(ctx, args);
  }
};

}  // namespace

const Algorithm* zeroCopyReduceScatter() {
  static ZeroCopyReduceScatter a;
  return &a;
}

}  // namespace braid
