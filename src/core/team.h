// The ranks of a communicator and how this rank reaches them: every rank's PeerInfo, one FIFO
// connection each way per peer (made by the registered transports), the bootstrap that
// connected them, and the wait policy every wait on those connections follows. A schedule moves
// data only through a Team; it never sees the rest of the communicator.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/bootstrap.h"
#include "patterns/ring.h"
#include "patterns/tree.h"
#include "transports/transport.h"
#include "util/wait.h"

namespace braid {

/// Every one of `peers` is a process of its own, and there are several: what every rank computes
/// alike from the peers' infos (teardown barriers depend on it).
bool oneRankPerProcess(const std::vector<PeerInfo>& peers);

class Team;

/// Pulls every receive connection of a team that its waiter fills (TCP): the team's waits do it
/// before each sleep slice (WaitPolicy::progress), as a receiving thread per connection would.
class PullEveryReceive final : public WaitProgress {
 public:
  explicit PullEveryReceive(const Team* team) : team_(team) {}
  void progress() override;

 private:
  const Team* team_;
};

class Team {
 public:
  Team() = default;
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  int rank = -1;
  int nranks = 0;
  uint64_t commHash = 0;  ///< the unique id's nonce: names the communicator in logs and messages
  std::vector<PeerInfo> peers;
  std::vector<std::unique_ptr<SendConnection>> sendTo;    ///< by peer rank; null if unused
  std::vector<std::unique_ptr<RecvConnection>> recvFrom;  ///< by peer rank
  std::unique_ptr<Bootstrap> bootstrap;
  WaitPolicy policy;
  /// What `policy.progress` points to once the connections are made.
  PullEveryReceive pullEveryReceive{this};
  /// The ring the ring schedules follow, as position -> rank: every host's ranks one after
  /// another (patterns::hostContiguousOrder); empty for rank order (one host, ranks numbered
  /// host by host, or BRAID_RING_ORDER=rank). The same on every rank.
  std::vector<int> ringOrder;
  int ringPosition = -1;  ///< this rank's position in ringOrder (its rank when that is empty)
  /// The second ring across hosts (patterns::reversedWithinHosts of the first ring's hosts): the
  /// ring allreduce runs both side by side on large messages, so two ranks of every host send
  /// to other hosts. Empty where there is none (one host, a host of one rank, rings in rank
  /// order, or BRAID_RINGS=1).
  std::vector<int> secondRingOrder;
  /// Rank r's position in ringOrder.
  int positionOf(int r) const;
  /// How the ranks sit on hosts (hosts in the order of their lowest rank), for the schedules
  /// that treat the links within and between hosts apart (the hierarchical allreduce).
  struct Hosts {
    int count = 1;                  ///< hosts
    int index = 0;                  ///< this rank's host
    int ranksPerHost = 0;           ///< ranks on each host when all have as many, else 0
    std::vector<int> local;         ///< the ranks on this rank's host, in rank order
    int localIndex = 0;             ///< this rank's place in `local`
    std::vector<int> counterparts;  ///< each host's rank at localIndex (when ranksPerHost > 0)
    std::vector<std::vector<int>> ranksOf;  ///< every host's ranks, in rank order
    std::vector<int> hostOf;                ///< every rank's host
  } hosts;
  /// The peers rank `r` talks to in ring, tree and hierarchical schedules: what init connects
  /// under BRAID_CONNECT=neighbours (and auto beyond kEagerConnectRanks). Symmetric: q is in
  /// neighboursOf(r) exactly when r is in neighboursOf(q).
  std::vector<int> neighboursOf(int r) const;
  /// Every peer connected over memory both ends map (shm or same-process): what algorithms that
  /// read a peer's memory in place need. Set once the connections are made.
  bool peersShareMemory = false;
  /// Every pair of ranks is connected by the P2P transport (the same answer on every rank):
  /// calls on device buffers move their data on the GPUs instead of staging it through the host.
  bool overP2p = false;

  /// True when init connected every pair of ranks (the same answer on every rank; false under
  /// BRAID_CONNECT=neighbours, and under auto beyond kEagerConnectRanks): what algorithms that
  /// exchange with arbitrary peers need. Pairs connected later (connectPairs) do not change it.
  bool allPairsConnected() const { return allPairs; }
  bool allPairs = false;
  /// What connectPairs needs to make a connection after init (set by commInit).
  TransportContext transportContext;
  /// This rank's view of the ring that ring schedules follow.
  patterns::Ring ring() const {
    return patterns::Ring::atPosition(ringPosition, ringOrder, nranks);
  }
  /// This rank's view of the second ring (secondRingOrder must not be empty).
  patterns::Ring secondRing() const;
  /// Tree `which` (0 or 1) of the double binary tree the tree schedules follow, seen from rank
  /// `r`: NCCL's layout across hosts (a tree over the hosts, a chain within each:
  /// patterns::doubleBinaryTreeOverHosts) when the ranks are on several hosts, else the tree
  /// over the ring's order.
  patterns::TreeNode treeNode(int r, int which) const;
  /// Sets `hosts` from the peers, and ringOrder and ringPosition (rank order when `ringByHost`
  /// is false), and with `rings` 2 the second ring where the hosts allow one.
  void mapHosts(bool ringByHost, int rings = 1);

  /// Connects this rank to each rank of `peersToConnect` in both directions, through the first
  /// registered transport that can (phase 1: receiving ends and their blobs; the bootstrap's
  /// all-gather; phase 2: sending ends; then a barrier and every receiver's finish()).
  ncclResult_t connect(const TransportContext& ctx, const std::vector<int>& peersToConnect);
  /// Connects this rank to each of `peersToConnect` it is not connected to yet, both ways, with
  /// only those peers taking part (their messages go through the bootstrap root's relay): a send
  /// or receive to a peer that init did not connect does this first. Each of those peers must
  /// call it for this rank too (a matching receive or send does); blobs go out to every peer
  /// before any is awaited, so peers that connect to several others at once cannot deadlock.
  ncclResult_t connectPairs(const std::vector<int>& peersToConnect);
  /// Drops every connection and the bootstrap (the peers' FIFOs may be gone after this). With
  /// `orderly` (a destroy, not an abort) and P2P device slots mapped across processes, the
  /// sending ends (which unmap the peers' slots) go first, then a barrier, then the receiving
  /// ends (which free their slots): CUDA IPC forbids freeing memory another process still maps.
  /// Only when every process holds one rank (the same answer on every rank): a process holding
  /// several may destroy their communicators one after another from one thread.
  void disconnect(bool orderly = false);
  /// Every rank is a process of its own, and there are several (the same answer on every rank).
  bool oneRankPerProcess() const { return braid::oneRankPerProcess(peers); }
};

}  // namespace braid
