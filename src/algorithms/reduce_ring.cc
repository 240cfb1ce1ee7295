// Ring reduce: partial results travel along the ring from the rank after the root to the root,
// each rank adding its contribution; the root applies the post-op (avg) and writes its output.
#include "algorithms/algorithm_registry.h"
#include "algorithms/ring_schedules.h"

namespace braid {
namespace {

class RingReduce : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduce && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    return subRingReduce(ctx, args, communicatorRing(ctx), args.root,
                         static_cast<const char*>(args.sendbuff), static_cast<char*>(args.recvbuff),
                         args.count);
  }
};

}  // namespace

const Algorithm* ringReduce() {
  static RingReduce a;
  return &a;
}

}  // namespace braid
