// Ring schedules over any ring of ranks (SubRing): the communicator's ring, the ring of a host's
// ranks, the ring of a rank's counterparts on every host (hierarchy.h). Allgather and
// reduce-scatter of groups of blocks, chain broadcast and chain reduce, in slot-sized pieces:
// the ring collectives and the hierarchical ones are these schedules over one ring or several.
#pragma once

#include <algorithm>
#include <cstddef>

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

/// Ring allgather over `r` of `groups` blocks per member: member j's block g is at where(j, g)
/// (a Span; the same lengths on every member), this rank's own blocks are copied there from
/// own(g) first (the same address: already in place). Groups run one after another per piece,
/// each a plain ring pass, so no FIFO ever holds more than one pass's slots.
template <class Where, class Own>
ncclResult_t subRingAllGather(Context& ctx, const CollArgs& args, const SubRing& r, int groups,
                              const Where& where, const Own& own) {
  Primitives prims(ctx, args, std::span<const int>(&r.prev, 1), std::span<const int>(&r.next, 1));
  const size_t es = args.elemSize, step = prims.maxElems();
  size_t widest = 0;
  for (int j = 0; j < r.members; j++)
    for (int g = 0; g < groups; g++) widest = std::max(widest, where(j, g).len);
  for (size_t off = 0; off < widest; off += step)
    for (int g = 0; g < groups; g++) {
      auto piece = [&](int j) { return pieceOf(where(j, g), off, step, es); };
      const Span mine = piece(r.me);
      const size_t start = std::min(off, where(r.me, g).len);
      BRAID_TRY(prims.copyCopySend(own(g) + start * es, mine.at, mine.len));
      for (int s = 1; s < r.members - 1; s++) {
        const Span p = piece(r.ring.chunkAt(s));
        BRAID_TRY(prims.recvCopySend(p.at, p.len));
      }
      const Span p = piece(r.ring.chunkAt(r.members - 1));
      BRAID_TRY(prims.recv(p.at, p.len));
    }
  return ncclSuccess;
}

/// Ring reduce-scatter over `r` of `groups` blocks per member: this rank's contribution to
/// member j's block g is at src(j, g) (a ConstSpan or Span); the reduced blocks of this rank's own
/// label go to dst(g). args.op decides which pre-op the contributions get and whether the post-op
/// is applied at the end (set postDiv = 1 for a first level, preMul = false for a second).
template <class Src, class Dst>
ncclResult_t subRingReduceScatter(Context& ctx, const CollArgs& args, const SubRing& r, int groups,
                                  const Src& src, const Dst& dst) {
  Primitives prims(ctx, args, std::span<const int>(&r.prev, 1), std::span<const int>(&r.next, 1));
  Primitives last(ctx, args, std::span<const int>(&r.prev, 1), std::span<const int>());
  const size_t es = args.elemSize, step = prims.maxElems();
  size_t widest = 0;
  for (int j = 0; j < r.members; j++)
    for (int g = 0; g < groups; g++) widest = std::max(widest, src(j, g).len);
  for (size_t off = 0; off < widest; off += step)
    for (int g = 0; g < groups; g++) {
      auto piece = [&](int j) { return pieceOf(src(j, g), off, step, es); };
      auto p = piece(r.ring.chunkAt(1));
      BRAID_TRY(prims.send(p.at, p.len));
      for (int s = 2; s < r.members; s++) {
        p = piece(r.ring.chunkAt(s));
        BRAID_TRY(prims.recvReduceSend(p.at, p.len));
      }
      p = piece(r.me);
      const size_t start = std::min(off, src(r.me, g).len);
      BRAID_TRY(last.recvReduceCopySend(p.at, dst(g) + start * es, p.len));
    }
  return ncclSuccess;
}

/// Broadcast along `r` from member `from`: `len` elements from `src` (at `from`) into `dst` on
/// every member, in slot-sized pieces down the chain from..from-1.
ncclResult_t subRingBroadcast(Context& ctx, const CollArgs& args, const SubRing& r, int from,
                              const char* src, char* dst, size_t len);

/// Reduce along `r` to member `to`: every member's `len` elements at `src` (pre-op as args.op
/// says), the result (post-op applied) into `dst` at `to`, in a chain from to+1 to `to`.
ncclResult_t subRingReduce(Context& ctx, const CollArgs& args, const SubRing& r, int to,
                           const char* src, char* dst, size_t len);

}  // namespace braid
