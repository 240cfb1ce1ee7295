#include "algorithms/ring_schedules.h"

namespace braid {

SubRingBroadcastSteps::SubRingBroadcastSteps(Context& ctx, const CollArgs& args, const SubRing& r,
                                             int from, const char* src, char* dst, size_t len)
    : r_(r),
      root_(r.me == from),
      leaf_(r.ring.next() == from),  // label after this one: the chain ends here
      prims_(ctx, args, std::span<const int>(&r_.prev, root_ ? 0 : 1),
             std::span<const int>(&r_.next, leaf_ ? 0 : 1)),
      src_(src),
      dst_(dst),
      len_(len),
      es_(args.elemSize),
      step_(prims_.maxElems()) {}

ncclResult_t SubRingBroadcastSteps::step() {
  const size_t off = off_, n = std::min(step_, len_ - off);
  off_ += step_;
  if (root_) return prims_.copyCopySend(src_ + off * es_, dst_ + off * es_, n);
  if (leaf_) return prims_.recv(dst_ + off * es_, n);
  return prims_.recvCopySend(dst_ + off * es_, n);
}

SubRingReduceSteps::SubRingReduceSteps(Context& ctx, const CollArgs& args, const SubRing& r, int to,
                                       const char* src, char* dst, size_t len)
    : r_(r),
      root_(r.me == to),
      first_(r.ring.prev() == to),  // the chain starts right after the root
      prims_(ctx, args, std::span<const int>(&r_.prev, first_ ? 0 : 1),
             std::span<const int>(&r_.next, root_ ? 0 : 1)),
      src_(src),
      dst_(dst),
      len_(len),
      es_(args.elemSize),
      step_(prims_.maxElems()) {}

ncclResult_t SubRingReduceSteps::step() {
  const size_t off = off_, n = std::min(step_, len_ - off);
  off_ += step_;
  if (first_) return prims_.send(src_ + off * es_, n);
  if (root_) return prims_.recvReduceCopySend(src_ + off * es_, dst_ + off * es_, n);
  return prims_.recvReduceSend(src_ + off * es_, n);
}

}  // namespace braid
