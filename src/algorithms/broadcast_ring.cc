// Ring broadcast: the root's data flows around the ring starting at the root, in slot-sized
// chunks, each rank copying a chunk into its output while forwarding it (one pass).

#include "algorithms/algorithm_registry.h"
#include "algorithms/broadcast_pipeline.h"
#include "algorithms/ring_schedules.h"

namespace braid {
namespace {

class RingBroadcast : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kBroadcast && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    return withRollCall(ctx, args, [&] {
      return subRingBroadcast(ctx, args, communicatorRing(ctx), args.root,
                              static_cast<const char*>(args.sendbuff),
                              static_cast<char*>(args.recvbuff), args.count);
    });
  }
};

}  // namespace

const Algorithm* ringBroadcast() {
  static RingBroadcast a;
  return &a;
}

}  // namespace braid
