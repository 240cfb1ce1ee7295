// The bootstrap ring: each rank's connection to its next and from its previous rank, over which
// all-gathers run (n-1 hops, every entry passed on), so the root only introduces the neighbours
// and never carries the n x n table. The root connection stays watched meanwhile: an error the
// root broadcasts (a rank that left) ends any ring wait.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/bootstrap_wire.h"
#include "nccl.h"
#include "util/clock.h"
#include "util/socket.h"

namespace braid {

/// What every ring wait watches besides its own sockets.
struct RingWait {
  Deadline deadline;
  const std::atomic<uint32_t>* abort = nullptr;
  int rootFd = -1;
  /// Reads one frame the root sent (a relay is kept, an error returned): called when rootFd is
  /// readable, so the root's verdict on a departed rank reaches a rank blocked on the ring.
  std::function<ncclResult_t()> rootReadable;
};

/// Tests only: called on the rank's thread once its ring port listens, before it joins the root
/// (so a test can knock on the port first). Null (the default) calls nothing.
using RingListenHook = void (*)(int rank, const SockAddr& ringAddr);
void setRingListenHook(RingListenHook hook);

class BootstrapRing {
 public:
  BootstrapRing(int rank, int nranks) : rank_(rank), nranks_(nranks) {}
  ~BootstrapRing();
  BootstrapRing(const BootstrapRing&) = delete;
  BootstrapRing& operator=(const BootstrapRing&) = delete;

  /// Opens the ring port on the local address of `rootFd` (the one that reaches the root, so
  /// it reaches the other ranks too), port 0, and writes it to *addr.
  ncclResult_t listen(int rootFd, SockAddr* addr);
  /// Connects to next (presenting the token for it) and accepts the previous rank (the
  /// connection that presents `a.tokenFromPrev`; others are dropped), then closes the port.
  ncclResult_t link(const RingAssignment& a, const RingWait& wait);
  /// Every rank contributes `mine`; all receive every contribution in rank order.
  ncclResult_t allGather(const std::string& mine, std::vector<std::string>* all,
                         const RingWait& wait);
  /// Closes the ring's sockets, so that neighbours still waiting on this rank learn at once
  /// that it has failed; later all-gathers fail.
  void close();

 private:
  int prevRank() const { return (rank_ + nranks_ - 1) % nranks_; }
  int nextRank() const { return (rank_ + 1) % nranks_; }
  ncclResult_t acceptPrev(const unsigned char token[kTokenBytes], const RingWait& wait);
  /// Writes what next takes now of out[*pos..].
  ncclResult_t pushToNext(const std::string& out, size_t* pos);
  /// Reads what prev has sent into inbuf_.
  ncclResult_t pullFromPrev();
  /// Sleeps until a ring socket or the root is ready; the deadline and the abort flag end it.
  ncclResult_t waitReady(bool sending, bool receiving, const RingWait& wait);

  int rank_;
  int nranks_;
  int listenFd_ = -1;
  int nextFd_ = -1;
  int prevFd_ = -1;
  bool closed_ = false;
  std::string inbuf_;  ///< bytes from prev not yet taken (may hold a later all-gather's start)
};

}  // namespace braid
