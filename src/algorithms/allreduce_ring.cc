// Ring allreduce: reduce-scatter then allgather around the ring, pipelined in slot-sized chunks.
// Each loop covers nranks chunks; rank r finishes chunk r (reducing the partial sums that have
// travelled the whole ring) and the final values then travel one more lap. Every rank moves
// 2(n-1)/n of the data, the bandwidth optimum; FIFO depth keeps several chunks in flight.
#include <algorithm>
#include <cstdint>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "algorithms/ring_allreduce.h"
#include "algorithms/ring_channels.h"

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

// One ring allreduce, one primitive at a time: the schedule as a sequence of steps, so that two
// rings can run side by side from one thread (each step of one, then of the other). Each loop
// over `n` chunks is 2n-1 steps: a send, n-2 receive-reduce-sends, the receive-reduce that
// finishes this rank's chunk, n-2 receive-copy-sends and the last receive.
class RingAllReduceSteps {
 public:
  RingAllReduceSteps(Context& ctx, const CollArgs& args, const patterns::Ring& ring, int n,
                     int prev, int next, const char* in, char* out, size_t count)
      : prims_(ctx, args, std::span<const int>(&prev, 1), std::span<const int>(&next, 1)),
        layout_{count, prims_.maxElems(), std::max<size_t>(1, 64 / args.elemSize), n},
        ring_(ring),
        landing_(layout_, ring, out, args.elemSize),
        in_(in),
        out_(out),
        es_(args.elemSize) {
    // Final values are never written again, and out of place neither is the input: both can be
    // sent from where they are, and final chunks can land in the output. In place, the output
    // chunks the allgather receives are the input chunks the reduce-scatter sent or read; the
    // ring's data dependencies order the two, but only through the network, where no
    // happens-before edge is visible to the threads (or ThreadSanitizer), so in place the
    // input goes through the slots and nothing lands.
    const auto first = reinterpret_cast<uintptr_t>(in), last = reinterpret_cast<uintptr_t>(out);
    const bool inPlace = first < last + count * es_ && last < first + count * es_;
    prims_.lendBuffers(/*input=*/!inPlace);
    // (Primitives keeps a pointer to the plan but never reads it once finish() returns.)
    if (!inPlace) prims_.landReceives(landing_);
  }
  RingAllReduceSteps(const RingAllReduceSteps&) = delete;
  RingAllReduceSteps& operator=(const RingAllReduceSteps&) = delete;

  bool done() const { return base_ >= layout_.count; }

  /// Runs the next step (done() must be false).
  ncclResult_t step() {
    const int n = layout_.n, last = 2 * n - 2, i = op_;
    // The chunk this step works on, counted in ring steps from this rank's own.
    const int ringStep = i == 0       ? 1
                         : i < n - 1  ? i + 1
                         : i == n - 1 ? 0
                         : i < last   ? i - n + 1
                                      : n - 1;
    size_t off, len;
    layout_.range(base_, layout_.chunkFor(base_), ring_.chunkAt(ringStep), &off, &len);
    const size_t at = off * es_;
    ncclResult_t result;
    if (i == 0)
      result = prims_.send(in_ + at, len);
    else if (i < n - 1)
      result = prims_.recvReduceSend(in_ + at, len);
    else if (i == n - 1)
      result = prims_.recvReduceCopySend(in_ + at, out_ + at, len);
    else if (i < last)
      result = prims_.recvCopySend(out_ + at, len);
    else
      result = prims_.recv(out_ + at, len);
    if (++op_ > last) {
      op_ = 0;
      base_ += static_cast<size_t>(n) * layout_.chunkMax;
    }
    return result;
  }

  ncclResult_t finish() { return prims_.finish(); }

 private:
  Primitives prims_;
  RingLayout layout_;
  patterns::Ring ring_;
  RingLanding landing_;
  const char* in_;
  char* out_;
  size_t es_;
  size_t base_ = 0;  ///< the first element of the current loop
  int op_ = 0;       ///< the next step within it
};

// Fitted at 2 ranks to the choices, not the times (tools/tuner-sweep's paired turns, five sweeps):
// each of the ring's two chained exchanges reads a chunk that is still in the peer core's cache,
// which Direct's one exchange pays once, so Direct runs to 128 KiB and the ring from 256 KiB.
// More ranks than cores: every step of the chain waits for a peer to be scheduled.
const AlgorithmTraits kTraits{.name = "Ring",
                              .cost = {.shared = {0, 2, 0, 1.20, 0.70},
                                       .dedicated = CostShape{0, 2, 0, 0.80, 0.75},
                                       .tcp = CostShape{0, 2, 0, 1.14, 0.574, 0.119}}};

class RingAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() > 1;
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const int n = ctx.nranks();
    const auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize;
    // A step of one ring carries a chunk of bytes / n; each channel reduces its slice of the
    // message around its ring.
    return runRingChannels(
        ctx, args.count * es / static_cast<size_t>(n), args.count, [&](const RingChannel& c) {
          return RingAllReduceSteps(ctx, args, c.ring.ring, n, c.ring.prev, c.ring.next,
                                    in + c.first * es, out + c.first * es, c.count);
        });
  }
};

}  // namespace

ncclResult_t ringAllReduceSchedule(Context& ctx, const CollArgs& args, const patterns::Ring& ring,
                                   int n, int prev, int next, const char* in, char* out,
                                   size_t count) {
  RingAllReduceSteps steps(ctx, args, ring, n, prev, next, in, out, count);
  return runToEnd(steps);
}

const Algorithm* ringAllReduce() {
  static RingAllReduce a;
  return &a;
}

}  // namespace braid
