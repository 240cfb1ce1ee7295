// The collectives, described once. The API reads a collective's arguments and buffer sizes from
// here, the registry lists its algorithms under it, the cost model takes its textbook traffic
// from it and the fingerprint its name: a new collective is one entry in kCollectives (plus its
// algorithms and its C entry point).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/collective_type.h"

namespace braid {

/// How large one of a call's buffers is on a rank, in units of the call's count.
enum class Extent : uint8_t {
  kCount,     ///< count elements
  kRanks,     ///< nranks x count (the gathered side)
  kRootOnly,  ///< count elements on the root; not used elsewhere
};

/// Bytes one rank moves (or reduces) in a textbook schedule, as multiples of the call's bytes S
/// on n ranks: once*S + part*(n-1)/n*S + peers*(n-1)*S + fill*(n-2)*min(S, slot) + logs*log2(n)*S.
/// The fill term is a pipeline's first slot crossing the hops before it fills.
struct Traffic {
  double once = 0, part = 0, peers = 0, fill = 0;
  double logs = 0;  ///< whole messages per doubling step (log2 n of them)
};

struct CollectiveInfo {
  CollType type;
  const char* name;  ///< as the logs and error messages name it ("AllReduce")
  bool rooted;       ///< takes a root rank
  bool reduction;    ///< combines values with an op; otherwise data is copied unchanged
  Extent send, recv;
  Traffic moved;    ///< what the cost model charges at the transport's bandwidth
  Traffic reduced;  ///< and at the reduction kernels' speed
};

/// The entry of `c`.
const CollectiveInfo& collectiveInfo(CollType c);
inline const char* collName(CollType c) {
  return collectiveInfo(c).name;
}

/// Bytes of a buffer of extent `e` on `rank` of `nranks`, for a call of `bytes` (count x size).
size_t extentBytes(Extent e, size_t bytes, int nranks, bool isRoot);

}  // namespace braid
