// The ranks of a communicator and how this rank reaches them: every rank's PeerInfo, one FIFO
// connection each way per peer (made by the registered transports), the bootstrap that
// connected them, and the wait policy every wait on those connections follows. A schedule moves
// data only through a Team; it never sees the rest of the communicator.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/bootstrap.h"
#include "transports/transport.h"
#include "util/wait.h"

namespace braid {

class Team {
 public:
  int rank = -1;
  int nranks = 0;
  uint64_t commHash = 0;  ///< the unique id's nonce: names the communicator in logs and messages
  std::vector<PeerInfo> peers;
  std::vector<std::unique_ptr<SendConnection>> sendTo;    ///< by peer rank; null if unused
  std::vector<std::unique_ptr<RecvConnection>> recvFrom;  ///< by peer rank
  std::unique_ptr<Bootstrap> bootstrap;
  WaitPolicy policy;
  /// Every peer connected over memory both ends map (shm or same-process): what algorithms that
  /// read a peer's memory in place need. Set once the connections are made.
  bool peersShareMemory = false;
  /// Every pair of ranks is connected by the P2P transport (the same answer on every rank):
  /// calls on device buffers move their data on the GPUs instead of staging it through the host.
  bool overP2p = false;

  /// True when every pair of ranks is connected (the same answer on every rank, which
  /// BRAID_CONNECT=neighbours makes false): what algorithms that exchange with arbitrary peers
  /// need.
  bool allPairsConnected() const;

  /// Connects this rank to each rank of `peersToConnect` in both directions, through the first
  /// registered transport that can (phase 1: receiving ends and their blobs; the bootstrap's
  /// all-gather; phase 2: sending ends; then a barrier and every receiver's finish()).
  ncclResult_t connect(const TransportContext& ctx, const std::vector<int>& peersToConnect);
  /// Drops every connection and the bootstrap (the peers' FIFOs may be gone after this).
  void disconnect();
};

}  // namespace braid
