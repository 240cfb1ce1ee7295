// Ring allgather: every rank's block travels n-1 hops around the ring; each rank copies a block
// into its place in the output while forwarding it. Blocks go in slot-sized pieces.
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_schedules.h"

namespace braid {
namespace {

class RingAllGather : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllGather && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t block = args.count, es = args.elemSize;
    return subRingAllGather(
        ctx, args, communicatorRing(ctx), 1,
        [&](int owner, int) {
          return Span{out + owner * block * es, block};
        },
        [&](int) { return static_cast<const char*>(args.sendbuff); });
  }
};

}  // namespace

const Algorithm* ringAllGather() {
  static RingAllGather a;
  return &a;
}

}  // namespace braid
