// Ring reduce: partial results travel along the ring from the rank after the root to the root,
// each rank adding its contribution; the root applies the post-op (avg) and writes its output.
#include <algorithm>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "patterns/ring.h"

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
    const patterns::Ring ring = ctx.team.ring();
    int prev = ring.prev(), next = ring.next();
    const bool isRoot = ctx.rank() == args.root;
    const bool isFirst = prev == args.root;  // the chain starts right after the root
    Primitives prims(ctx, args, std::span<const int>(&prev, isFirst ? 0 : 1),
                     std::span<const int>(&next, isRoot ? 0 : 1));
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize, step = prims.maxElems();
    for (size_t off = 0; off < args.count; off += step) {
      size_t len = std::min(step, args.count - off);
      if (isFirst)
        BRAID_TRY(prims.send(in + off * es, len));
      else if (isRoot)
        BRAID_TRY(prims.recvReduceCopySend(in + off * es, out + off * es, len));
      else
        BRAID_TRY(prims.recvReduceSend(in + off * es, len));
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* ringReduce() {
  static RingReduce a;
  return &a;
}

}  // namespace braid
