// Rabenseifner's allreduce at a power of two, in the output buffer itself: a reduce-scatter by
// recursive halving (log2 n steps, each sending half of what the rank still holds to the rank
// 2^k away and combining the half it keeps), then an allgather by recursive doubling (the
// steps in reverse, trading the final blocks). Each rank sends 2(n-1)/n of the message in
// 2 log2(n) messages, with no scratch buffer and no rotation; over TCP the pieces are sent
// from the output instead of copied into slots.
#include "algorithms/halving_doubling.h"

#include <algorithm>
#include <vector>

#include "algorithms/primitives.h"
#include "util/status.h"

namespace braid {
namespace {

// The elements of blocks [lo, hi) of the count split n ways.
struct Range {
  size_t start, count;
};

class Halves {
 public:
  Halves(size_t count, int n) : starts_(n + 1) {
    const size_t each = count / n, extra = count % n;
    for (int b = 0; b <= n; b++) starts_[b] = b * each + std::min(static_cast<size_t>(b), extra);
  }
  Range of(int lo, int hi) const { return {starts_[lo], starts_[hi] - starts_[lo]}; }

 private:
  std::vector<size_t> starts_;
};

enum class Take { kReduce, kCopy };

// One step with `partner`: sends `send` elements of `out`, receives `recv` elements into `out`
// (combined with what is there, or copied), a slot at a time: piece i goes out before piece i
// is awaited, so two partners never wait on each other. Over TCP the pieces are lent from `out`
// (they do not change until the caller waits for their release) instead of copied into slots.
ncclResult_t exchange(Context& ctx, const CollArgs& args, int partner, char* out, Range send,
                      Range recv, Take take, bool last) {
  const size_t es = args.elemSize;
  size_t piece = (ctx.config.slotBytes / es) & ~size_t(63);
  if (piece == 0) piece = ctx.config.slotBytes / es;
  FifoSender& to = ctx.sendFifo(partner);
  FifoReceiver& from = ctx.recvFifo(partner);
  const size_t sends = (send.count + piece - 1) / piece, recvs = (recv.count + piece - 1) / piece;
  const bool lower = ctx.rank() < partner;
  for (size_t i = 0; i < std::max(sends, recvs); i++) {
    if (i < sends) {
      const size_t first = send.start + i * piece,
                   n = std::min(piece, send.start + send.count - first);
      const SlotInfo info = slotInfo(static_cast<uint32_t>(n * es), args.fingerprint);
      void* slot;
      BRAID_TRY(to.acquire(ctx.policy(), &slot));
      if (to.acceptsLent()) {
        to.postLent(out + first * es, info);
      } else {
        kernels::copy(slot, nullptr, out + first * es, n * es);
        to.post(info);
      }
    }
    if (i < recvs) {
      const size_t first = recv.start + i * piece,
                   n = std::min(piece, recv.start + recv.count - first);
      const void* theirs;
      BRAID_TRY(waitForSlot(ctx, args, partner, n * es, &theirs));
      char* mine = out + first * es;
      if (take == Take::kCopy) {
        kernels::copy(mine, nullptr, theirs, n * es);
      } else {
        // The lower rank's partial result first: the order does not depend on who combines.
        const unsigned flags = last ? kernels::kApplyPost : 0u;
        kernels::reduce(args.op, mine, nullptr, lower ? mine : theirs, lower ? theirs : mine, n,
                        flags);
      }
      from.release();
    }
  }
  return ncclSuccess;
}

// Waits until every lent piece to each partner in `partners` has left (their memory is about to
// change, or go back to the caller).
ncclResult_t releaseLent(Context& ctx, const std::vector<int>& partners) {
  for (int p : partners)
    if (ctx.sendFifo(p).acceptsLent()) BRAID_TRY(ctx.sendFifo(p).waitReleased(ctx.policy()));
  return ncclSuccess;
}

// On an early return, the connections must let go of the user's buffer before the call returns:
// a healthy one does within milliseconds; one stuck behind the peer that failed the call is cut
// (as Primitives does on its error paths).
struct LentGuard {
  Context& ctx;
  const std::vector<int>& partners;
  bool armed = true;
  ~LentGuard() {
    if (!armed) return;
    WaitPolicy quick = ctx.policy();
    quick.timeoutS = std::min(quick.timeoutS, 0.1);
    quick.stall = nullptr;
    for (int p : partners)
      if (ctx.sendFifo(p).acceptsLent()) (void)ctx.sendFifo(p).waitReleased(quick);
  }
};

}  // namespace

bool isPowerOfTwo(int n) {
  return n > 0 && (n & (n - 1)) == 0;
}

ncclResult_t runHalvingDoubling(Context& ctx, const CollArgs& args) {
  const int n = ctx.nranks(), me = ctx.rank();
  char* out = static_cast<char*>(args.recvbuff);
  // Pre-op into the output (in place too: the kernel allows exact aliasing).
  kernels::reduce(args.op, out, nullptr, nullptr, args.sendbuff, args.count, kernels::kApplyPre);
  const Halves halves(args.count, n);
  std::vector<int> partners;
  LentGuard guard{ctx, partners};
  // Reduce-scatter by recursive halving: keep the half of the current blocks on this rank's
  // side of the partner, send the other; the last step leaves block `me`, post-op applied.
  int lo = 0, hi = n;
  for (int mask = n / 2; mask >= 1; mask /= 2) {
    const int partner = me ^ mask, mid = (lo + hi) / 2;
    const bool upper = (me & mask) != 0;
    const Range keep = upper ? halves.of(mid, hi) : halves.of(lo, mid);
    const Range give = upper ? halves.of(lo, mid) : halves.of(mid, hi);
    partners.push_back(partner);
    BRAID_TRY(exchange(ctx, args, partner, out, give, keep, Take::kReduce, mask == 1));
    if (upper)
      lo = mid;
    else
      hi = mid;
  }
  // What was lent in the halving is overwritten by the doubling's receives.
  BRAID_TRY(releaseLent(ctx, partners));
  // Allgather by recursive doubling: trade the final blocks held for the partner's as many.
  for (int mask = 1; mask < n; mask *= 2) {
    const int partner = me ^ mask, width = hi - lo;
    const bool upper = (me & mask) != 0;
    const Range mine = halves.of(lo, hi);
    const Range theirs = upper ? halves.of(lo - width, lo) : halves.of(hi, hi + width);
    BRAID_TRY(exchange(ctx, args, partner, out, mine, theirs, Take::kCopy, false));
    if (upper)
      lo -= width;
    else
      hi += width;
  }
  BRAID_TRY(releaseLent(ctx, partners));
  guard.armed = false;
  return ncclSuccess;
}

}  // namespace braid
