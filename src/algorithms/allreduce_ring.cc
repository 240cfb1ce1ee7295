// Ring allreduce: reduce-scatter then allgather around the ring, pipelined in slot-sized chunks.
// Each loop covers nranks chunks; rank r finishes chunk r (reducing the partial sums that have
// travelled the whole ring) and the final values then travel one more lap. Every rank moves
// 2(n-1)/n of the data, the bandwidth optimum; FIFO depth keeps several chunks in flight.
#include <algorithm>
#include <cstdint>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "algorithms/ring_allreduce.h"

namespace braid {
namespace {

// Which elements chunk c of the loop starting at element `base` covers. Chunks past the end are
// empty but still travel, keeping every rank in step.
struct RingLayout {
  size_t count, chunkMax, align;
  int n;
  size_t chunkFor(size_t base) const {
    size_t chunk = std::min(chunkMax, (count - base + n - 1) / n);
    return std::min(chunkMax, (chunk + align - 1) / align * align);
  }
  void range(size_t base, size_t chunk, int c, size_t* off, size_t* len) const {
    size_t start = base + static_cast<size_t>(c) * chunk;
    *off = start;
    *len = start >= count ? 0 : std::min(chunk, count - start);
  }
};

// The allgather half's receives are final values copied unchanged: they can land in the output
// straight from a TCP socket. Each loop receives n-1 partial sums, then n-1 final chunks.
class RingLanding : public LandingPlan {
 public:
  RingLanding(const RingLayout& layout, patterns::Ring ring, char* out, size_t es)
      : layout_(layout), ring_(ring), out_(out), es_(es) {}
  bool landing(size_t k, void** dst, size_t* n) const override {
    const size_t perLoop = 2 * static_cast<size_t>(layout_.n - 1);
    const size_t loop = k / perLoop, r = k % perLoop;
    const size_t base = loop * static_cast<size_t>(layout_.n) * layout_.chunkMax;
    if (r < perLoop / 2 || base >= layout_.count) return false;
    size_t off, len;
    int step = static_cast<int>(r - perLoop / 2) + 1;
    layout_.range(base, layout_.chunkFor(base), ring_.chunkAt(step), &off, &len);
    *dst = out_ + off * es_;
    *n = len;
    return len > 0;
  }

 private:
  RingLayout layout_;
  patterns::Ring ring_;
  char* out_;
  size_t es_;
};

class RingAllReduce : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() > 1;
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const patterns::Ring ring = ctx.team.ring();
    return ringAllReduceSchedule(ctx, args, ring, ctx.nranks(), ring.prev(), ring.next(),
                                 static_cast<const char*>(args.sendbuff),
                                 static_cast<char*>(args.recvbuff), args.count);
  }
};

}  // namespace

ncclResult_t ringAllReduceSchedule(Context& ctx, const CollArgs& args, const patterns::Ring& ring,
                                   int n, int prev, int next, const char* in, char* out,
                                   size_t count) {
  Primitives prims(ctx, args, std::span<const int>(&prev, 1), std::span<const int>(&next, 1));
  const RingLayout layout{count, prims.maxElems(), std::max<size_t>(1, 64 / args.elemSize), n};
  const size_t es = args.elemSize;
  // Final values are never written again, and out of place neither is the input: both can be
  // sent from where they are, and final chunks can land in the output. In place, the output
  // chunks the allgather receives are the input chunks the reduce-scatter sent or read; the
  // ring's data dependencies order the two, but only through the network, where no
  // happens-before edge is visible to the threads (or ThreadSanitizer), so in place the
  // input goes through the slots and nothing lands.
  const auto first = reinterpret_cast<uintptr_t>(in), last = reinterpret_cast<uintptr_t>(out);
  const bool inPlace = first < last + count * es && last < first + count * es;
  prims.lendBuffers(/*input=*/!inPlace);
  // (Primitives keeps a pointer to the plan but never reads it once this returns.)
  const RingLanding landing(layout, ring, out, es);
  if (!inPlace) prims.landReceives(landing);

  for (size_t base = 0; base < count; base += static_cast<size_t>(n) * layout.chunkMax) {
    const size_t chunk = layout.chunkFor(base);
    size_t off, len;
    auto range = [&](int step) { layout.range(base, chunk, ring.chunkAt(step), &off, &len); };
    range(1);
    BRAID_TRY(prims.send(in + off * es, len));
    for (int step = 2; step < n; step++) {
      range(step);
      BRAID_TRY(prims.recvReduceSend(in + off * es, len));
    }
    range(0);
    BRAID_TRY(prims.recvReduceCopySend(in + off * es, out + off * es, len));
    for (int step = 1; step < n - 1; step++) {
      range(step);
      BRAID_TRY(prims.recvCopySend(out + off * es, len));
    }
    range(n - 1);
    BRAID_TRY(prims.recv(out + off * es, len));
  }
  return prims.finish();
}

const Algorithm* ringAllReduce() {
  static RingAllReduce a;
  return &a;
}

}  // namespace braid
