// Ring schedules over any ring of ranks (SubRing): the communicator's ring, the ring of a host's
// ranks, the ring of a rank's counterparts on every host (hierarchy.h). Allgather and
// reduce-scatter of groups of blocks, chain broadcast and chain reduce, in slot-sized pieces:
// the ring collectives and the hierarchical ones are these schedules over one ring or several.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>

#include "algorithms/primitives.h"
#include "patterns/ring.h"

namespace braid {

/// A ring over some ranks of the communicator, seen from this rank: member labels (ranks for the
/// communicator's ring, local indices for a host's, host indices for the counterparts'), `ring`
/// names the labels step by step, `me` is this rank's label, prev and next are the ranks this
/// rank receives from and sends to.
struct SubRing {
  patterns::Ring ring;
  int members, me;
  int prev, next;
};

/// The communicator's ring (Team::ring: in host order unless BRAID_RING_ORDER=rank), labels ranks.
inline SubRing communicatorRing(const Context& ctx) {
  const patterns::Ring ring = ctx.team.ring();
  return {ring, ctx.nranks(), ctx.rank(), ring.prev(), ring.next()};
}

/// A block of a ring schedule: where it is and how many elements it has (ConstSpan: in
/// the caller's input).
struct Span {
  char* at;
  size_t len;
};
struct ConstSpan {
  const char* at;
  size_t len;
};

/// The piece of `b` (elements of `es` bytes) that starts `off` elements in, at most `step` long
/// (empty past its end): the members of a ring step through their blocks together, so every
/// block moves as many pieces as the longest one, and both ends of a connection agree on every
/// piece's length.
template <class SpanT>
SpanT pieceOf(SpanT b, size_t off, size_t step, size_t es) {
  const size_t start = std::min(off, b.len);
  return {b.at + start * es, std::min(step, b.len - start)};
}

/// Where a schedule of ring passes stands: `groups` passes per piece, a piece being `step`
/// elements into every block, up to the widest block (`blockLen(member, group)`); a pass is a
/// step per member (two where a ring has one member, as the loops these replace had).
struct RingPassCursor {
  struct At {
    size_t off;  ///< the piece, in elements from each block's start
    int g, s;    ///< the group, the step within the pass
  };
  template <class BlockLen>
  RingPassCursor(const SubRing& r, int groups, size_t step, const BlockLen& blockLen)
      : step(step), groups(groups), perPass(std::max(r.members, 2)) {
    for (int j = 0; j < r.members; j++)
      for (int g = 0; g < groups; g++) widest = std::max(widest, blockLen(j, g));
  }
  bool done() const { return at.off >= widest; }
  /// The position to run now; moves on to the next.
  At next() {
    const At now = at;
    if (++at.s == perPass) {
      at.s = 0;
      if (++at.g == groups) at.g = 0, at.off += step;
    }
    return now;
  }
  bool lastOfPass(const At& a) const { return a.s == perPass - 1; }

  size_t step, widest = 0;
  int groups, perPass;
  At at{0, 0, 0};
};

/// Ring allgather over `r` of `groups` blocks per member: member j's block g is at where(j, g)
/// (a Span; the same lengths on every member), this rank's own blocks are copied there from
/// own(g) first (the same address: already in place). Groups run one after another per piece,
/// each a plain ring pass, so no FIFO ever holds more than one pass's slots. One primitive per
/// step(), so that channels can run side by side from one thread (ring_channels.h).
template <class Where, class Own>
class SubRingAllGatherSteps {
 public:
  SubRingAllGatherSteps(Context& ctx, const CollArgs& args, const SubRing& r, int groups,
                        Where where, Own own)
      : r_(r),
        where_(std::move(where)),
        own_(std::move(own)),
        prims_(ctx, args, std::span<const int>(&r_.prev, 1), std::span<const int>(&r_.next, 1)),
        es_(args.elemSize),
        at_(r_, groups, prims_.maxElems(), [this](int j, int g) { return where_(j, g).len; }) {}
  SubRingAllGatherSteps(const SubRingAllGatherSteps&) = delete;
  SubRingAllGatherSteps& operator=(const SubRingAllGatherSteps&) = delete;

  bool done() const { return at_.done(); }
  /// Runs the next primitive (done() must be false): this rank's piece copied and sent, the
  /// others received (and forwarded, but for the last).
  ncclResult_t step() {
    const RingPassCursor::At a = at_.next();
    auto piece = [&](int j) { return pieceOf(where_(j, a.g), a.off, at_.step, es_); };
    if (a.s == 0) {
      const Span mine = piece(r_.me);
      const size_t start = std::min(a.off, where_(r_.me, a.g).len);
      return prims_.copyCopySend(own_(a.g) + start * es_, mine.at, mine.len);
    }
    if (at_.lastOfPass(a)) {
      const Span p = piece(r_.ring.chunkAt(r_.members - 1));
      return prims_.recv(p.at, p.len);
    }
    const Span p = piece(r_.ring.chunkAt(a.s));
    return prims_.recvCopySend(p.at, p.len);
  }
  ncclResult_t finish() { return prims_.finish(); }

 private:
  const SubRing r_;  // before prims_, which keeps pointers to its prev and next
  Where where_;
  Own own_;
  Primitives prims_;
  const size_t es_;
  RingPassCursor at_;
};

/// Ring reduce-scatter over `r` of `groups` blocks per member: this rank's contribution to
/// member j's block g is at src(j, g) (a ConstSpan or Span); the reduced blocks of this rank's own
/// label go to dst(g). args.op decides which pre-op the contributions get and whether the post-op
/// is applied at the end (set postDiv = 1 for a first level, preMul = false for a second). One
/// primitive per step(), as SubRingAllGatherSteps.
template <class Src, class Dst>
class SubRingReduceScatterSteps {
 public:
  SubRingReduceScatterSteps(Context& ctx, const CollArgs& args, const SubRing& r, int groups,
                            Src src, Dst dst)
      : r_(r),
        src_(std::move(src)),
        dst_(std::move(dst)),
        prims_(ctx, args, std::span<const int>(&r_.prev, 1), std::span<const int>(&r_.next, 1)),
        last_(ctx, args, std::span<const int>(&r_.prev, 1), std::span<const int>()),
        es_(args.elemSize),
        at_(r_, groups, prims_.maxElems(), [this](int j, int g) { return src_(j, g).len; }) {}
  SubRingReduceScatterSteps(const SubRingReduceScatterSteps&) = delete;
  SubRingReduceScatterSteps& operator=(const SubRingReduceScatterSteps&) = delete;

  bool done() const { return at_.done(); }
  /// Runs the next primitive (done() must be false): the first piece sent, the partial sums
  /// received, reduced and sent on, this rank's own reduced into its output.
  ncclResult_t step() {
    const RingPassCursor::At a = at_.next();
    auto piece = [&](int j) { return pieceOf(src_(j, a.g), a.off, at_.step, es_); };
    if (a.s == 0) {
      const auto p = piece(r_.ring.chunkAt(1));
      return prims_.send(p.at, p.len);
    }
    if (at_.lastOfPass(a)) {
      const auto p = piece(r_.me);
      const size_t start = std::min(a.off, src_(r_.me, a.g).len);
      return last_.recvReduceCopySend(p.at, dst_(a.g) + start * es_, p.len);
    }
    const auto p = piece(r_.ring.chunkAt(a.s + 1));
    return prims_.recvReduceSend(p.at, p.len);
  }
  ncclResult_t finish() {
    BRAID_TRY(prims_.finish());
    return last_.finish();
  }

 private:
  const SubRing r_;  // before the primitives, which keep pointers to its prev and next
  Src src_;
  Dst dst_;
  Primitives prims_, last_;
  const size_t es_;
  RingPassCursor at_;
};

/// Runs one schedule (done(), step(), finish()) to its end: a ring of its own, or one level of
/// the hierarchical schedules (several channels: ring_channels.h).
template <class Steps>
ncclResult_t runToEnd(Steps& steps) {
  while (!steps.done()) BRAID_TRY(steps.step());
  return steps.finish();
}

template <class Where, class Own>
ncclResult_t subRingAllGather(Context& ctx, const CollArgs& args, const SubRing& r, int groups,
                              const Where& where, const Own& own) {
  SubRingAllGatherSteps<const Where&, const Own&> steps(ctx, args, r, groups, where, own);
  return runToEnd(steps);
}

template <class Src, class Dst>
ncclResult_t subRingReduceScatter(Context& ctx, const CollArgs& args, const SubRing& r, int groups,
                                  const Src& src, const Dst& dst) {
  SubRingReduceScatterSteps<const Src&, const Dst&> steps(ctx, args, r, groups, src, dst);
  return runToEnd(steps);
}

/// Broadcast along `r` from member `from`: `len` elements from `src` (at `from`) into `dst` on
/// every member, in slot-sized pieces down the chain from..from-1, one piece per step().
class SubRingBroadcastSteps {
 public:
  SubRingBroadcastSteps(Context& ctx, const CollArgs& args, const SubRing& r, int from,
                        const char* src, char* dst, size_t len);
  SubRingBroadcastSteps(const SubRingBroadcastSteps&) = delete;
  SubRingBroadcastSteps& operator=(const SubRingBroadcastSteps&) = delete;
  bool done() const { return off_ >= len_; }
  ncclResult_t step();
  ncclResult_t finish() { return prims_.finish(); }

 private:
  const SubRing r_;  // before prims_, which keeps pointers to its prev and next
  const bool root_, leaf_;
  Primitives prims_;
  const char* src_;
  char* dst_;
  const size_t len_, es_, step_;
  size_t off_ = 0;
};

/// Reduce along `r` to member `to`: every member's `len` elements at `src` (pre-op as args.op
/// says), the result (post-op applied) into `dst` at `to`, in a chain from to+1 to `to`, one
/// piece per step().
class SubRingReduceSteps {
 public:
  SubRingReduceSteps(Context& ctx, const CollArgs& args, const SubRing& r, int to, const char* src,
                     char* dst, size_t len);
  SubRingReduceSteps(const SubRingReduceSteps&) = delete;
  SubRingReduceSteps& operator=(const SubRingReduceSteps&) = delete;
  bool done() const { return off_ >= len_; }
  ncclResult_t step();
  ncclResult_t finish() { return prims_.finish(); }

 private:
  const SubRing r_;  // before prims_, which keeps pointers to its prev and next
  const bool root_, first_;
  Primitives prims_;
  const char* src_;
  char* dst_;
  const size_t len_, es_, step_;
  size_t off_ = 0;
};

inline ncclResult_t subRingBroadcast(Context& ctx, const CollArgs& args, const SubRing& r, int from,
                                     const char* src, char* dst, size_t len) {
  SubRingBroadcastSteps steps(ctx, args, r, from, src, dst, len);
  return runToEnd(steps);
}

inline ncclResult_t subRingReduce(Context& ctx, const CollArgs& args, const SubRing& r, int to,
                                  const char* src, char* dst, size_t len) {
  SubRingReduceSteps steps(ctx, args, r, to, src, dst, len);
  return runToEnd(steps);
}

/// `p` + `elems` elements of `es` bytes, or nullptr where `p` is (a buffer a rank does not use,
/// such as a broadcast's input away from the root).
template <class T>
T* offsetOrNull(T* p, size_t elems, size_t es) {
  return p ? p + elems * es : nullptr;
}

}  // namespace braid
