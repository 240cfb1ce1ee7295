// The data movement every broadcast shape shares: the root copies its input to its output and
// sends it on, inner nodes receive, keep and forward, leaves only receive; slot-sized chunks keep
// every level of the chain or tree busy at once.
#pragma once

#include <algorithm>

#include "algorithms/primitives.h"

namespace braid {

enum class BroadcastRole { kRoot, kInner, kLeaf };

/// Moves args' broadcast through `prims` (bound to this rank's parent and children).
inline ncclResult_t pipelineBroadcast(Primitives& prims, const CollArgs& args, BroadcastRole role) {
  auto* in = static_cast<const char*>(args.sendbuff);
  auto* out = static_cast<char*>(args.recvbuff);
  const size_t es = args.elemSize, step = prims.maxElems();
  for (size_t off = 0; off < args.count; off += step) {
    size_t len = std::min(step, args.count - off);
    if (role == BroadcastRole::kRoot)
      BRAID_TRY(prims.copyCopySend(in + off * es, out + off * es, len));
    else if (role == BroadcastRole::kLeaf)
      BRAID_TRY(prims.recv(out + off * es, len));
    else
      BRAID_TRY(prims.recvCopySend(out + off * es, len));
  }
  return ncclSuccess;
}

/// A broadcast whose ranks disagree on the root would otherwise complete: a root only sends, so
/// a rank that wrongly believes it is the root never reads anything and keeps its own data. The
/// roll call closes that gap: the rank before the root (on the ring) sends the root one empty
/// slot carrying its fingerprint (which names the root it believes in) before its own part, and
/// the root reads it after sending everything. The edge into the root carries no broadcast data
/// in any shape, so the slot is never in the data's way. On agreement the price is that the root
/// cannot finish before the rank before it has started (a few microseconds per small broadcast
/// in a loop, docs/reliability.md); on disagreement each self-declared root receives a data slot
/// naming another root, or (waiting for a roll call that never comes) sees the rank it waits for
/// leave the call (mismatch_watch.h). withRollCall runs any broadcast schedule `body` (in which
/// the root only sends) between the two halves of the roll call.
template <class Body>
ncclResult_t withRollCall(Context& ctx, const CollArgs& args, const Body& body) {
  const int root = args.root;
  const int beforeRoot = (root - 1 + ctx.nranks()) % ctx.nranks();
  char none = 0;
  if (ctx.rank() == beforeRoot) {
    Primitives call(ctx, args, {}, std::span<const int>(&root, 1));
    BRAID_TRY(call.copySend(&none, 0));
  }
  BRAID_TRY(body());
  if (ctx.rank() == root) {
    Primitives call(ctx, args, std::span<const int>(&beforeRoot, 1), {});
    BRAID_TRY(call.recv(&none, 0));
  }
  return ncclSuccess;
}

inline ncclResult_t broadcastWithRollCall(Context& ctx, const CollArgs& args, Primitives& prims,
                                          BroadcastRole role) {
  return withRollCall(ctx, args, [&] { return pipelineBroadcast(prims, args, role); });
}

}  // namespace braid
