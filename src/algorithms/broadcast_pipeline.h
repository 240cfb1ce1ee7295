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

}  // namespace braid
