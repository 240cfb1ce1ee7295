#include "algorithms/ring_schedules.h"

#include "algorithms/broadcast_pipeline.h"

namespace braid {

ncclResult_t subRingBroadcast(Context& ctx, const CollArgs& args, const SubRing& r, int from,
                              const char* src, char* dst, size_t len) {
  const bool isRoot = r.me == from;
  const bool isLeaf = r.ring.next() == from;  // label after this one: the chain ends here
  Primitives prims(ctx, args, std::span<const int>(&r.prev, isRoot ? 0 : 1),
                   std::span<const int>(&r.next, isLeaf ? 0 : 1));
  CollArgs part = args;
  part.sendbuff = src;
  part.recvbuff = dst;
  part.count = len;
  return pipelineBroadcast(prims, part,
                           isRoot   ? BroadcastRole::kRoot
                           : isLeaf ? BroadcastRole::kLeaf
                                    : BroadcastRole::kInner);
}

ncclResult_t subRingReduce(Context& ctx, const CollArgs& args, const SubRing& r, int to,
                           const char* src, char* dst, size_t len) {
  const bool isRoot = r.me == to;
  const bool isFirst = r.ring.prev() == to;  // the chain starts right after the root
  Primitives prims(ctx, args, std::span<const int>(&r.prev, isFirst ? 0 : 1),
                   std::span<const int>(&r.next, isRoot ? 0 : 1));
  const size_t es = args.elemSize, step = prims.maxElems();
  for (size_t off = 0; off < len; off += step) {
    const size_t n = std::min(step, len - off);
    if (isFirst)
      BRAID_TRY(prims.send(src + off * es, n));
    else if (isRoot)
      BRAID_TRY(prims.recvReduceCopySend(src + off * es, dst + off * es, n));
    else
      BRAID_TRY(prims.recvReduceSend(src + off * es, n));
  }
  return ncclSuccess;
}

}  // namespace braid
