// Ring allreduce: reduce-scatter then allgather around the ring, pipelined in slot-sized chunks.
// Each loop covers nranks chunks; rank r finishes chunk r (reducing the partial sums that have
// travelled the whole ring) and the final values then travel one more lap. Every rank moves
// 2(n-1)/n of the data, the bandwidth optimum; FIFO depth keeps several chunks in flight.
#include <algorithm>

#include "algorithms/primitives.h"
#include "algorithms/registry.h"
#include "patterns/ring.h"

namespace braid {
namespace {

class RingAllReduce : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool supports(const CollArgs& args, const ncclComm& comm) const override {
    return args.coll == CollType::kAllReduce && comm.nranks > 1;
  }

  ncclResult_t run(const CollArgs& args, ncclComm& comm) const override {
    patterns::Ring ring{comm.rank, comm.nranks};
    const int n = comm.nranks;
    int prev = ring.prev(), next = ring.next();
    Primitives prims(comm, args, std::span<const int>(&prev, 1), std::span<const int>(&next, 1));
    const size_t count = args.count, chunkMax = prims.maxElems();
    const size_t align = std::max<size_t>(1, 64 / args.elemSize);
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize;

    for (size_t base = 0; base < count; base += static_cast<size_t>(n) * chunkMax) {
      size_t remaining = count - base;
      size_t chunk = std::min(chunkMax, (remaining + n - 1) / n);
      chunk = std::min(chunkMax, (chunk + align - 1) / align * align);
      // Chunks past the end are empty but still travel, keeping every rank in step.
      auto range = [&](int c, size_t* off, size_t* len) {
        size_t start = base + static_cast<size_t>(c) * chunk;
        *off = start;
        *len = start >= count ? 0 : std::min(chunk, count - start);
      };
      size_t off, len;
      range(ring.chunkAt(1), &off, &len);
      BRAID_TRY(prims.send(in + off * es, len));
      for (int step = 2; step < n; step++) {
        range(ring.chunkAt(step), &off, &len);
        BRAID_TRY(prims.recvReduceSend(in + off * es, len));
      }
      range(ring.chunkAt(0), &off, &len);
      BRAID_TRY(prims.recvReduceCopySend(in + off * es, out + off * es, len));
      for (int step = 1; step < n - 1; step++) {
        range(ring.chunkAt(step), &off, &len);
        BRAID_TRY(prims.recvCopySend(out + off * es, len));
      }
      range(ring.chunkAt(n - 1), &off, &len);
      BRAID_TRY(prims.recv(out + off * es, len));
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* ringAllReduce() {
  static RingAllReduce a;
  return &a;
}

}  // namespace braid
