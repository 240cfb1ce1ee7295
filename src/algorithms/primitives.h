// The transport primitives every algorithm is written in (NCCL's vocabulary). A Primitives
// object binds one operation to the FIFOs it receives from and sends to; each call moves one step
// of at most maxElems() elements, reducing straight out of received slots into the send slots.
#pragma once

#include <cstddef>
#include <span>

#include "algorithms/algorithm.h"

namespace braid {

/// Waits for the next slot from `from` and checks that it belongs to `args`' operation and
/// carries `bytes`; a mismatch fails naming both calls. The slot stays held until released.
ncclResult_t waitForSlot(Context& ctx, const CollArgs& args, int from, size_t bytes,
                         const void** data);

/// Block j of `count` elements split n ways: equal parts (multiples of 64 elements, so kernels
/// see aligned vectors), the remainder in the last non-empty blocks. Rank j owns block j in the
/// direct algorithms (TwoShot, ZeroCopy).
struct Block {
  size_t start, len;
};
inline Block blockOf(size_t count, int n, int j) {
  size_t per = (count + n - 1) / n;
  per = (per + 63) & ~size_t(63);
  size_t start = per * j < count ? per * j : count;
  return {start, per < count - start ? per : count - start};
}

/// Runs `piece(in, out, count)` over the call's elements in pieces of at most one slot (multiples
/// of 64 elements where a slot holds that many): the one-exchange-per-message algorithms (Direct,
/// RecursiveDoubling) move a larger message as a series of slot-sized calls of their own.
template <class Piece>
ncclResult_t forEachSlotPiece(const CollArgs& args, const Context& ctx, const Piece& piece) {
  size_t step = (ctx.config.slotBytes / args.elemSize) & ~size_t(63);
  if (step == 0) step = ctx.config.slotBytes / args.elemSize;
  const size_t es = args.elemSize;
  for (size_t off = 0; off < args.count; off += step) {
    const size_t n = step < args.count - off ? step : args.count - off;
    BRAID_TRY(piece(static_cast<const char*>(args.sendbuff) + off * es,
                    static_cast<char*>(args.recvbuff) + off * es, n));
  }
  return ncclSuccess;
}

/// Where an algorithm's receives of final data end up, so that a TCP proxy can receive them
/// straight there instead of into a slot (Primitives::landReceives). Receives are counted from 0
/// in the order the algorithm waits for them.
class LandingPlan {
 public:
  virtual ~LandingPlan() = default;
  /// The k-th receive's destination and element count when it is final data the algorithm takes
  /// unchanged (recv, recvCopySend); false when it reduces it or the call has no k-th receive.
  virtual bool landing(size_t k, void** dst, size_t* n) const = 0;
};

class Primitives {
 public:
  /// recvPeers/sendPeers: ranks whose connections this step pattern uses (-1 entries skipped).
  Primitives(Context& ctx, const CollArgs& args, std::span<const int> recvPeers,
             std::span<const int> sendPeers);

  /// Waits (bounded) for lent buffers still queued, if finish() was not reached.
  ~Primitives();

  /// Largest element count one step can carry.
  size_t maxElems() const { return maxElems_; }

  /// Lets sends go out of this rank's own buffers instead of through a copy into the slot, where
  /// the connection's reader is a thread of this process (TCP's proxy): recvReduceCopySend() and
  /// recvCopySend() lend `dst` (final values), and with `input` send()/copySend() lend `src`
  /// (unless a pre-op must transform it). The algorithm promises that lent memory is not written
  /// again in this call (input: the call is out of place), and calls finish() before it returns.
  void lendBuffers(bool input) {
    lend_ = nsend_ == 1 && send_[0]->acceptsLent();
    lendInput_ = lend_ && input;
  }
  /// Lets the receives `plan` names land in their destination straight from the socket, where
  /// the connection is filled by a thread of this process (TCP's proxy). Call before the first
  /// receive; a plan that names a receive the algorithm reduces is a bug.
  void landReceives(const LandingPlan& plan);
  /// Waits until the connections released every lent buffer (the user may reuse them after the
  /// call returns).
  ncclResult_t finish();

  /// Sends this rank's contribution (pre-op applied for reductions).
  ncclResult_t send(const void* src, size_t n);
  /// Sends src unchanged (already final data).
  ncclResult_t copySend(const void* src, size_t n);
  /// Copies src to dst (if they differ) and sends it, in one pass.
  ncclResult_t copyCopySend(const void* src, void* dst, size_t n);
  /// Receives into dst.
  ncclResult_t recv(void* dst, size_t n);
  /// Reduces received data with the local contribution and sends the partial result on.
  ncclResult_t recvReduceSend(const void* src, size_t n);
  /// Reduces received data with the local contribution into dst (post-op applied: final value)
  /// and sends the result on (if this pattern has send peers).
  ncclResult_t recvReduceCopySend(const void* src, void* dst, size_t n);
  /// Receives final data into dst and forwards it.
  ncclResult_t recvCopySend(void* dst, size_t n);

 private:
  ncclResult_t acquireSends(size_t n);
  /// kernels::reduce / kernels::copy, on the GPU for a call on device buffers.
  ncclResult_t reduce(void* out0, void* out1, const void* acc, const void* local, size_t n,
                      unsigned flags);
  ncclResult_t copy(void* out0, void* out1, const void* src, size_t bytes);
  ncclResult_t waitRecvs(size_t n);
  void postSends(size_t n);
  void postLent(const void* data, size_t n);
  void releaseRecvs();
  void claimLanding(size_t k, bool handOver);
  /// Where the received payload is: the slot, or the destination it landed in.
  const void* received() const { return recv_[0]->landedPayload(recvSlot_[0]); }
  ncclResult_t describeStall(ncclResult_t code, int peer, bool sending);

  Context& ctx_;
  const CollArgs& args_;
  FifoReceiver* recv_[2] = {};
  FifoSender* send_[2] = {};
  int recvPeer_[2] = {-1, -1};
  int sendPeer_[2] = {-1, -1};
  int nrecv_ = 0;
  int nsend_ = 0;
  void* sendSlot_[2] = {};
  const void* recvSlot_[2] = {};
  size_t maxElems_ = 0;
  bool lend_ = false;
  bool lendInput_ = false;
  bool lentPending_ = false;
  const LandingPlan* plan_ = nullptr;
  uint32_t planBase_ = 0;  ///< the FIFO position of receive 0
  size_t received_ = 0;    ///< receives consumed so far
  size_t claimedTo_ = 0;   ///< receives [0, claimedTo_) have been offered to the plan
};

}  // namespace braid
