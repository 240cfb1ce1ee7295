// Ring reduce-scatter: the first half of ring allreduce. Block b's partial sum starts at rank
// b+1 and travels the ring, each rank adding its contribution, until rank b finishes it (post-op
// applied) into its output.
#include <algorithm>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "patterns/ring.h"

namespace braid {
namespace {

class RingReduceScatter : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kReduceScatter && ctx.nranks() > 1;
  }
  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const patterns::Ring ring = ctx.team.ring();
    const int n = ctx.nranks();
    int prev = ring.prev(), next = ring.next();
    Primitives prims(ctx, args, std::span<const int>(&prev, 1), std::span<const int>(&next, 1));
    Primitives last(ctx, args, std::span<const int>(&prev, 1), std::span<const int>());
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize, step = prims.maxElems(), block = args.count;
    auto at = [&](int owner, size_t off) { return in + (owner * block + off) * es; };
    for (size_t off = 0; off < block; off += step) {
      size_t len = std::min(step, block - off);
      BRAID_TRY(prims.send(at(ring.chunkAt(1), off), len));
      for (int s = 2; s < n; s++) BRAID_TRY(prims.recvReduceSend(at(ring.chunkAt(s), off), len));
      BRAID_TRY(last.recvReduceCopySend(at(ctx.rank(), off), out + off * es, len));
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* ringReduceScatter() {
  static RingReduceScatter a;
  return &a;
}

}  // namespace braid
