// The host's half of a point-to-point launch (kernels/device/p2p.h): a rank's sends and receives,
// in the order they were posted, arranged into a launch's items (each (peer, direction)'s
// adjacent, in posting order, with its block group). Used by the API (src/exec/device_launch.cc)
// and by the emulation tests, so both run the same arrangement.
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/device/p2p.h"

namespace braid::kernels::device {

/// Fills out->items, count and pairs from `posted` (at most kMaxP2pItems) of rank out->comm.rank;
/// the caller sets comm and channelsPerPeer. A launch of sends to self and their receives only
/// gets one block group (the receives copy). Whether sends and receives to self pair up (as
/// many, the same sizes) is the caller's to check.
inline void arrangeP2p(const std::vector<P2pItem>& posted, P2pLaunchArgs* out) {
  const int self = out->comm.rank;
  std::vector<int> order(posted.size());
  for (std::size_t i = 0; i < posted.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const P2pItem& x = posted[a];
    const P2pItem& y = posted[b];
    return x.peer != y.peer ? x.peer < y.peer : x.isSend < y.isSend;
  });
  out->count = 0;
  out->pairs = 0;
  const P2pItem* last = nullptr;
  for (const int i : order) {
    P2pItem& it = out->items[out->count++];
    it = posted[i];
    if (it.isSend && it.peer == self) {
      it.pair = -1;
      continue;
    }
    if (last == nullptr || last->peer != it.peer || last->isSend != it.isSend) out->pairs++;
    it.pair = static_cast<std::int16_t>(out->pairs - 1);
    last = &posted[i];
  }
  if (out->pairs == 0 && out->count > 0) out->pairs = 1;  // only sends to self: nothing to copy
}

}  // namespace braid::kernels::device
