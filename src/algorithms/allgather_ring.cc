// Ring allgather: every rank's block travels n-1 hops around the ring; each rank copies a block
// into its place in the output while forwarding it. Blocks go in slot-sized pieces.
#include <algorithm>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "patterns/ring.h"

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
    const patterns::Ring ring = ctx.team.ring();
    const int n = ctx.nranks();
    int prev = ring.prev(), next = ring.next();
    Primitives prims(ctx, args, std::span<const int>(&prev, 1), std::span<const int>(&next, 1));
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize, step = prims.maxElems(), block = args.count;
    auto at = [&](int owner, size_t off) { return out + (owner * block + off) * es; };
    for (size_t off = 0; off < block; off += step) {
      size_t len = std::min(step, block - off);
      BRAID_TRY(prims.copyCopySend(in + off * es, at(ctx.rank(), off), len));
      for (int s = 1; s < n - 1; s++) BRAID_TRY(prims.recvCopySend(at(ring.chunkAt(s), off), len));
      BRAID_TRY(prims.recv(at(ring.chunkAt(n - 1), off), len));
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* ringAllGather() {
  static RingAllGather a;
  return &a;
}

}  // namespace braid
