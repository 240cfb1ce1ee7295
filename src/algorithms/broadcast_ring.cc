// Ring broadcast: the root's data flows around the ring starting at the root, in slot-sized
// chunks, each rank copying a chunk into its output while forwarding it (one pass).

#include "algorithms/broadcast_pipeline.h"
#include "algorithms/registry.h"
#include "patterns/ring.h"

namespace braid {
namespace {

class RingBroadcast : public Algorithm {
 public:
  const char* name() const override { return "Ring"; }
  bool movesDeviceMemory() const override { return true; }
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
    BroadcastRole role = isRoot   ? BroadcastRole::kRoot
                         : isLast ? BroadcastRole::kLeaf
                                  : BroadcastRole::kInner;
    return broadcastWithRollCall(comm, args, prims, role);
  }
};

}  // namespace

const Algorithm* ringBroadcast() {
  static RingBroadcast a;
  return &a;
}

}  // namespace braid
