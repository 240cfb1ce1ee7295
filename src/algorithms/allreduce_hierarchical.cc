// Hierarchical allreduce, for ranks on several hosts (as many on each): a ring reduce-scatter
// among the ranks of each host leaves rank i of the host with block i summed over its host; the
// ranks holding block i on every host all-reduce it over a ring between hosts (all the hosts'
// local ranks at once, each over its own connections); a ring allgather within each host then
// gives every rank every block. Each host's network link carries 2(H-1)/H of the message for H
// hosts, where even a ring that visits each host's ranks in a row carries 2(n-1)/n for n ranks,
// and the steps within a host run over shared memory.
#include <algorithm>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "algorithms/ring_allreduce.h"

namespace braid {
namespace {

// The pieces of `l` blocks (blockOf) that one step of a ring within a host moves: at most
// `step` elements of each block, starting `off` elements into it (empty past its end).
struct Pieces {
  size_t count, step, off;
  int l;
  size_t of(int j, size_t* start) const {
    const Block b = blockOf(count, l, j);
    *start = b.start + std::min(off, b.len);
    return std::min(step, b.len - std::min(off, b.len));
  }
};

class HierarchicalAllReduce : public Algorithm {
 public:
  const char* name() const override { return "Hierarchical"; }
  bool movesDeviceMemory() const override { return true; }
  bool supports(const CollArgs& args, const Context& ctx) const override {
    const Team::Hosts& hosts = ctx.team.hosts;
    return args.coll == CollType::kAllReduce && hosts.count > 1 && hosts.ranksPerHost > 1 &&
           ctx.team.allPairsConnected();
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const Team::Hosts& hosts = ctx.team.hosts;
    const int l = hosts.ranksPerHost, me = hosts.localIndex;
    const patterns::Ring localRing{me, l};
    int prev = hosts.local[localRing.prev()], next = hosts.local[localRing.next()];
    const size_t es = args.elemSize;
    auto* in = static_cast<const char*>(args.sendbuff);
    auto* out = static_cast<char*>(args.recvbuff);
    const size_t widest = blockOf(args.count, l, 0).len;

    // 1. Reduce-scatter within the host: every rank's pre-op (premulsum) once, no post-op yet
    // (avg divides the total, once, at the end of step 2). Block j ends in rank j's output.
    CollArgs partial = args;
    partial.op.postDiv = 1;
    {
      Primitives prims(ctx, partial, std::span<const int>(&prev, 1),
                       std::span<const int>(&next, 1));
      Primitives last(ctx, partial, std::span<const int>(&prev, 1), std::span<const int>());
      for (size_t off = 0; off < widest; off += prims.maxElems()) {
        const Pieces piece{args.count, prims.maxElems(), off, l};
        size_t at, len = piece.of(localRing.chunkAt(1), &at);
        BRAID_TRY(prims.send(in + at * es, len));
        for (int s = 2; s < l; s++) {
          len = piece.of(localRing.chunkAt(s), &at);
          BRAID_TRY(prims.recvReduceSend(in + at * es, len));
        }
        len = piece.of(me, &at);
        BRAID_TRY(last.recvReduceCopySend(in + at * es, out + at * es, len));
      }
    }

    // 2. Block `me` all-reduced among the hosts, in place: the partial sums are this rank's
    // contribution now (their pre-op is applied), the post-op comes last.
    CollArgs total = args;
    total.op.preMul = false;
    const Block mine = blockOf(args.count, l, me);
    const int h = hosts.count;
    const patterns::Ring hostRing{hosts.index, h};
    BRAID_TRY(ringAllReduceSchedule(ctx, total, hostRing, h, hosts.counterparts[hostRing.prev()],
                                    hosts.counterparts[hostRing.next()], out + mine.start * es,
                                    out + mine.start * es, mine.len));

    // 3. Allgather within the host: each block travels the host's ring from its owner.
    Primitives prims(ctx, args, std::span<const int>(&prev, 1), std::span<const int>(&next, 1));
    for (size_t off = 0; off < widest; off += prims.maxElems()) {
      const Pieces piece{args.count, prims.maxElems(), off, l};
      size_t at, len = piece.of(me, &at);
      BRAID_TRY(prims.copySend(out + at * es, len));
      for (int s = 1; s < l - 1; s++) {
        len = piece.of(localRing.chunkAt(s), &at);
        BRAID_TRY(prims.recvCopySend(out + at * es, len));
      }
      len = piece.of(localRing.chunkAt(l - 1), &at);
      BRAID_TRY(prims.recv(out + at * es, len));
    }
    return ncclSuccess;
  }
};

}  // namespace

const Algorithm* hierarchicalAllReduce() {
  static HierarchicalAllReduce a;
  return &a;
}

}  // namespace braid
