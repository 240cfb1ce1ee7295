// Zero-copy allgather between ranks on one host whose buffers are registered (zero_copy.h):
// after the descriptor exchange every rank copies each peer's input straight into that peer's
// block of its output, then a barrier keeps every input alive until all have read it. Per rank:
// (n-1)/n of the output read from the peers and the output written once; no slot traffic.
#include "algorithms/algorithm_registry.h"
#include "algorithms/zero_copy.h"
#include "util/status.h"

namespace braid {
namespace {

// Always preferred where it applies (registered buffers on one host); priced as a ring.
const AlgorithmTraits kTraits{
    .name = "ZeroCopy", .preference = Preference::kWhereverSupported, .cost = {}};

class ZeroCopyAllGather : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllGather &&
           zeroCopyCandidate(ctx, args.count * args.elemSize * ctx.nranks());
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const int n = ctx.nranks(), me = ctx.rank();
    const size_t block = args.count * args.elemSize;
    ZeroCopyView view;
    BRAID_TRY(zeroCopyExchange(ctx, args, block, 0, &view));
    if (!view.usable) return zeroCopyFallback(ctx, args, ringAllGather());
    char* out = static_cast<char*>(args.recvbuff);
    for (int i = 0; i < n; i++) {
      const int k = (me + i) % n;  // own block first (skipped in place), then the peers'
      if (view.send[k] != out + k * block)
        kernels::copy(out + k * block, nullptr, view.send[k], block);
    }
    return zeroCopyBarrier(ctx, args);
  }
};

}  // namespace

const Algorithm* zeroCopyAllGather() {
  static ZeroCopyAllGather a;
  return &a;
}

}  // namespace braid
