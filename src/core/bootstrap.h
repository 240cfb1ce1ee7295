// A rank's side of the bootstrap: join the root named by the unique id, which introduces each
// rank to its neighbours on the bootstrap ring; learn every peer's PeerInfo over the ring; later
// all-gather small blobs over the ring, barrier and relay messages through the root.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/bootstrap_ring.h"
#include "core/unique_id.h"
#include "nccl.h"
#include "util/clock.h"
#include "util/wait.h"

namespace braid {

/// A rank's side of the root handshake on the connected socket `fd` (bootstrap_wire.h): checks
/// the root's proof of the id's secret (unless `verifyRoot` is false, which only tests use to
/// play a rank with a wrong secret up to the root's verdict), then sends this rank's proof, who
/// it is and where its ring port listens (`ringAddr`; len 0 for a communicator of one rank).
ncclResult_t bootstrapHandshake(int fd, const UniqueIdFields& f, int nranks, int rank,
                                const SockAddr& ringAddr, const Deadline& deadline,
                                const std::atomic<uint32_t>* abort, bool verifyRoot = true);

class Bootstrap {
 public:
  /// Connects to the root (starting it first when this is rank 0 of an NCCL_COMM_ID-style id),
  /// links into the bootstrap ring, all-gathers `info` over it and returns every rank's info in
  /// rank order.
  static ncclResult_t join(const ncclUniqueId& id, int rank, int nranks, const std::string& info,
                           const WaitPolicy& policy, std::unique_ptr<Bootstrap>* out,
                           std::vector<std::string>* allInfo);
  ~Bootstrap();

  /// Every rank contributes `mine`; all receive every rank's contribution in rank order (over
  /// the ring).
  ncclResult_t allGather(const std::string& mine, std::vector<std::string>* all);
  /// Returns once every rank has entered it (a round at the root with an empty answer).
  ncclResult_t barrier();
  /// Sends `payload` to rank `peer` through the root (it does not wait for the peer).
  ncclResult_t sendTo(int peer, const std::string& payload);
  /// The next message rank `peer` sent to this rank with sendTo (messages from other ranks that
  /// arrive meanwhile are kept for their own recvFrom).
  ncclResult_t recvFrom(int peer, std::string* payload);

 private:
  Bootstrap(int fd, int rank, int nranks, const WaitPolicy& policy)
      : fd_(fd), rank_(rank), nranks_(nranks), policy_(policy), ring_(rank, nranks) {}
  /// Reads the next frame from the root; relays go to `relayed_` and read on until a frame of
  /// kind `want` arrives (its body in *body), or with `want` 0 until one relay has arrived.
  ncclResult_t readFrame(uint32_t want, std::string* body);
  /// What a ring wait started now watches: this call's deadline, the abort flag, the root.
  RingWait ringWait();
  /// After the ring failed with `r`: closes it at once (the neighbours still waiting learn it
  /// now) and lets the root's verdict, which names the rank that left, replace what this rank
  /// saw of it, if it comes within a moment.
  ncclResult_t ringFailed(ncclResult_t r);

  int fd_;
  int rank_;
  int nranks_;
  bool helloSent_ = false;   ///< the root admitted (or may admit) us: it expects a goodbye
  std::string rootVerdict_;  ///< the error the root sent, if it sent one
  WaitPolicy policy_;
  std::map<int, std::deque<std::string>> relayed_;  ///< messages by sender, not yet taken
  BootstrapRing ring_;
};

}  // namespace braid
