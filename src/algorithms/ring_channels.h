// Channels, written once: a ring collective describes the work of one slice of its elements on
// one ring (a schedule of done(), step(), finish(): ring_schedules.h), and runRingChannels
// splits the call into slices, one per channel, builds each slice's schedule on its channel's
// ring and interleaves their steps, as NCCL splits every call into channels. The channels are
// the rings the team built (Team::ring, and across hosts Team::secondRing: each host's ranks in
// reverse, so the second ring sends to other hosts from other ranks than the first); they share
// no connection in the same direction, so no channel's step waits on another's.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <utility>

#include "algorithms/ring_schedules.h"

namespace braid {

/// One channel's share of a call: the ring it travels and its slice of the elements (in the
/// unit the algorithm splits: the message, or each rank's block).
struct RingChannel {
  SubRing ring;
  size_t first, count;
};

inline constexpr int kMaxRingChannels = 2;

/// How many channels a call whose steps would each carry `stepBytes` on one ring runs on: every
/// ring the team built (two across hosts, unless BRAID_RINGS=1), but only from a slot's worth a
/// step up, since below it a further ring adds steps, not bandwidth.
inline int ringChannelCount(const Context& ctx, size_t stepBytes) {
  const int rings = ctx.team.secondRingOrder.empty() ? 1 : 2;
  return stepBytes >= ctx.config.slotBytes ? rings : 1;
}

/// Where slice `i` of `k` of `count` elements starts: a multiple of 64 elements (but for the
/// end), so every slice starts where the vector kernels' blocks do.
inline size_t sliceStart(size_t count, int i, int k) {
  return i >= k ? count : count * static_cast<size_t>(i) / static_cast<size_t>(k) / 64 * 64;
}

/// Runs a ring collective of `count` elements (per slice unit) on its channels: `make(channel)`
/// returns the schedule of one channel's slice (constructed in place: schedules do not move).
template <class Make>
ncclResult_t runRingChannels(Context& ctx, size_t stepBytes, size_t count, const Make& make) {
  using Steps = decltype(make(std::declval<const RingChannel&>()));
  // A channel and its schedule, which may keep references into it.
  struct Built {
    Built(const Make& m, const RingChannel& c) : channel(c), steps(m(channel)) {}
    RingChannel channel;
    Steps steps;
  };
  const int k = ringChannelCount(ctx, stepBytes);
  std::array<std::optional<Built>, kMaxRingChannels> built;
  for (int i = 0; i < k; i++) {
    const patterns::Ring ring = i == 0 ? ctx.team.ring() : ctx.team.secondRing();
    const size_t first = sliceStart(count, i, k);
    built[i].emplace(make, RingChannel{{ring, ctx.nranks(), ctx.rank(), ring.prev(), ring.next()},
                                       first,
                                       sliceStart(count, i + 1, k) - first});
  }
  // One step of each channel in turn until all are done, then each finished.
  for (bool any = true; any;) {
    any = false;
    for (int i = 0; i < k; i++) {
      Steps& s = built[i]->steps;
      if (s.done()) continue;
      any = true;
      BRAID_TRY(s.step());
    }
  }
  for (int i = 0; i < k; i++) BRAID_TRY(built[i]->steps.finish());
  return ncclSuccess;
}

}  // namespace braid
