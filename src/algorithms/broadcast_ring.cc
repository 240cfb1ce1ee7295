// Ring broadcast: the root's data flows around the ring starting at the root, in slot-sized
// chunks, each rank copying a chunk into its output while forwarding it (one pass).
#include <algorithm>

#include "algorithms/primitives.h"
#include "algorithms/registry.h"
#include "patterns/ring.h"

namespace braid {
namespace {

class RingBroadcast : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool supports(const CollArgs& args, const ncclComm& comm) const override {
    return args.coll == CollType::kBroadcast && comm.nranks > 1;
  }
  ncclResult_t run(const CollArgs& args, ncclComm& comm) const override {
    patterns::Ring ring{comm.rank, comm.nranks};
    int prev = ring.prev(), next = ring.next();
    const bool isRoot = comm.rank == args.root;
    const bool isLast = next == args.root;  // the end of the chain sends nothing on
    Primitives prims(comm, args, std::span<const int>(&prev, isRoot ? 0 : 1),
                     std::span<const int>(&next, isLast ? 0 : 1));
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t es = args.elemSize, step = prims.maxElems();
    for (size_t off = 0; off < args.count; off += step) {
      size_t len = std::min(step, args.count - off);
      if (isRoot)
        BRAID_TRY(prims.copyCopySend(in + off * es, out + off * es, len));
      else if (isLast)
        BRAID_TRY(prims.recv(out + off * es, len));
      else
        BRAID_TRY(prims.recvCopySend(out + off * es, len));
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* ringBroadcast() {
  static RingBroadcast a;
  return &a;
}

}  // namespace braid
