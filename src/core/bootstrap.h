// A rank's side of the bootstrap: join the root named by the unique id, learn every peer's
// PeerInfo, then all-gather small blobs (transport connect blobs) and barrier through the root.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/unique_id.h"
#include "nccl.h"
#include "util/clock.h"
#include "util/wait.h"

namespace braid {

/// A rank's side of the root handshake on the connected socket `fd` (bootstrap_wire.h): checks
/// the root's proof of the id's secret (unless `verifyRoot` is false, which only tests use to
/// play a rank with a wrong secret up to the root's verdict), then sends this rank's proof, who
/// it is and `info`.
ncclResult_t bootstrapHandshake(int fd, const UniqueIdFields& f, int nranks, int rank,
                                const std::string& info, const Deadline& deadline,
                                const std::atomic<uint32_t>* abort, bool verifyRoot = true);

class Bootstrap {
 public:
  /// Connects to the root (starting it first when this is rank 0 of an NCCL_COMM_ID-style id),
  /// sends `info`, and returns every rank's info in rank order.
  static ncclResult_t join(const ncclUniqueId& id, int rank, int nranks, const std::string& info,
                           const WaitPolicy& policy, std::unique_ptr<Bootstrap>* out,
                           std::vector<std::string>* allInfo);
  ~Bootstrap();

  /// Every rank contributes `mine`; all receive every rank's contribution in rank order.
  ncclResult_t allGather(const std::string& mine, std::vector<std::string>* all);
  ncclResult_t barrier();
  /// Sends `payload` to rank `peer` through the root (it does not wait for the peer).
  ncclResult_t sendTo(int peer, const std::string& payload);
  /// The next message rank `peer` sent to this rank with sendTo (messages from other ranks that
  /// arrive meanwhile are kept for their own recvFrom).
  ncclResult_t recvFrom(int peer, std::string* payload);

 private:
  Bootstrap(int fd, int nranks, const WaitPolicy& policy)
      : fd_(fd), nranks_(nranks), policy_(policy) {}
  ncclResult_t receiveRound(std::vector<std::string>* all);
  /// Reads the next frame from the root; relays go to `relayed_` and read on (until a round's
  /// reply when `round`, else until one relay has arrived).
  ncclResult_t readFrame(bool round, std::string* body);

  int fd_;
  int nranks_;
  WaitPolicy policy_;
  std::map<int, std::deque<std::string>> relayed_;  ///< messages by sender, not yet taken
};

}  // namespace braid
