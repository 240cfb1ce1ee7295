// Mismatches that no slot reveals. A receiver checks every slot's fingerprint, but ranks in
// different collectives may never send each other a slot: an AllReduce's tree waits on a child
// that is itself inside a Broadcast, waiting on its parent. Both would wait for the deadline.
// While a collective is stalled (about 20 ms without progress), its rank publishes the call it is
// in (and the one before) on every connection it sends on, and reads what its peers published on
// the connections it receives on. The wait fails at once, with both calls named, when a peer is
// at the same sequence number in another call, or when the peer it waits for has already left
// this call (so in that peer's view the call never sent here). Nothing is published or read
// while operations make progress.
#pragma once

#include "algorithms/algorithm.h"
#include "util/wait.h"

namespace braid {

class MismatchWatch : public StallObserver {
 public:
  /// Installs itself in ctx.policy() for the lifetime of the object (one running collective).
  MismatchWatch(Context& ctx, const CollArgs& args);
  ~MismatchWatch() override;
  MismatchWatch(const MismatchWatch&) = delete;
  MismatchWatch& operator=(const MismatchWatch&) = delete;

  ncclResult_t onStall(const WakeWord& waitingOn) override;

 private:
  ncclResult_t mismatch(int peer, const Fingerprint& theirs);

  Context& ctx_;
  const CollArgs& args_;
  StallObserver* previous_;
  bool published_ = false;
};

}  // namespace braid
