#include "core/team.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "patterns/tree.h"
#include "transports/p2p/p2p_transport.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

void PullEveryReceive::progress() {
  for (const auto& c : team_->recvFrom)
    if (c)
      if (SlotPuller* puller = c->fifo().puller()) puller->pull();
}

void Team::mapHosts(bool ringByHost, int rings) {
  std::vector<uint64_t> hostOf(peers.size());
  for (size_t r = 0; r < peers.size(); r++) hostOf[r] = peers[r].hostHash;
  // Hosts numbered in the order of their lowest rank.
  std::vector<uint64_t> hostKeys;
  std::vector<std::vector<int>> ranksOf;
  for (int r = 0; r < nranks; r++) {
    const size_t h = std::find(hostKeys.begin(), hostKeys.end(), hostOf[r]) - hostKeys.begin();
    if (h == hostKeys.size()) hostKeys.push_back(hostOf[r]), ranksOf.emplace_back();
    ranksOf[h].push_back(r);
  }
  hosts = Hosts{};
  hosts.count = static_cast<int>(hostKeys.size());
  hosts.index = static_cast<int>(std::find(hostKeys.begin(), hostKeys.end(), hostOf[rank]) -
                                 hostKeys.begin());
  hosts.local = ranksOf[hosts.index];
  hosts.localIndex = static_cast<int>(std::find(hosts.local.begin(), hosts.local.end(), rank) -
                                      hosts.local.begin());
  hosts.ranksPerHost = static_cast<int>(hosts.local.size());
  for (const std::vector<int>& on : ranksOf)
    if (on.size() != hosts.local.size()) hosts.ranksPerHost = 0;
  if (hosts.ranksPerHost > 0)
    for (const std::vector<int>& on : ranksOf) hosts.counterparts.push_back(on[hosts.localIndex]);
  hosts.hostOf.resize(nranks);
  for (size_t h = 0; h < ranksOf.size(); h++)
    for (int r : ranksOf[h]) hosts.hostOf[r] = static_cast<int>(h);
  hosts.ranksOf = std::move(ranksOf);

  ringOrder = ringByHost ? patterns::hostContiguousOrder(hostOf) : std::vector<int>{};
  ringPosition = positionOf(rank);
  secondRingOrder =
      ringByHost && rings > 1 ? patterns::reversedWithinHosts(hosts.ranksOf) : std::vector<int>{};
}

patterns::Ring Team::secondRing() const {
  return patterns::Ring::ofRank(rank, secondRingOrder, nranks);
}

int Team::positionOf(int r) const {
  return ringOrder.empty() ? r
                           : static_cast<int>(std::find(ringOrder.begin(), ringOrder.end(), r) -
                                              ringOrder.begin());
}

patterns::TreeNode Team::treeNode(int r, int which) const {
  if (hosts.count > 1)
    return patterns::doubleBinaryTreeOverHosts(hosts.ranksOf, hosts.hostOf[r], r, which);
  return patterns::doubleBinaryTreeInOrder(ringOrder, positionOf(r), nranks, which);
}

std::vector<int> Team::neighboursOf(int r) const {
  std::vector<int> out;
  if (nranks <= 1) return out;
  // The ring's neighbours and both trees'.
  const patterns::Ring ring = patterns::Ring::ofRank(r, ringOrder, nranks);
  out = {ring.prev(), ring.next()};
  if (!secondRingOrder.empty()) {  // and the second ring's
    const patterns::Ring second = patterns::Ring::ofRank(r, secondRingOrder, nranks);
    out.insert(out.end(), {second.prev(), second.next()});
  }
  for (int t = 0; t < 2; t++) {
    const patterns::TreeNode node = treeNode(r, t);
    for (int q : {node.parent, node.children[0], node.children[1]})
      if (q >= 0) out.push_back(q);
  }
  // The hierarchical allreduce adds the ring within r's host and the ring of r's counterparts
  // on the other hosts ...
  const std::vector<int>& local = hosts.ranksOf[hosts.hostOf[r]];
  const int l = static_cast<int>(local.size());
  const int li = static_cast<int>(std::find(local.begin(), local.end(), r) - local.begin());
  if (l > 1) out.insert(out.end(), {local[(li + 1) % l], local[(li + l - 1) % l]});
  if (hosts.ranksPerHost > 0 && hosts.count > 1) {
    const int h = hosts.count, hi = hosts.hostOf[r];
    out.insert(out.end(), {hosts.ranksOf[(hi + 1) % h][li], hosts.ranksOf[(hi + h - 1) % h][li]});
    // ... and the trees over those counterparts (HierarchicalTree).
    for (int t = 0; t < 2; t++) {
      const patterns::TreeNode node = patterns::doubleBinaryTree(hi, h, t);
      for (int g : {node.parent, node.children[0], node.children[1]})
        if (g >= 0) out.push_back(hosts.ranksOf[g][li]);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), r), out.end());
  return out;
}

ncclResult_t Team::connect(const TransportContext& ctx, const std::vector<int>& peersToConnect) {
  sendTo.resize(nranks);
  recvFrom.resize(nranks);
  // Phase 1: receiving ends, described by blobs, each sent to its peer alone through the root
  // (an all-gather would send every rank every pair's blob: n^2 of them through one socket).
  for (int peer : peersToConnect) {
    Transport* t = chooseTransport(ctx, peer);
    if (!t) return fail(ncclSystemError, "no transport can connect rank %d to rank %d", rank, peer);
    ConnectBlob blob{};
    BRAID_TRY(t->setupRecv(ctx, peer, &blob, &recvFrom[peer]));
    BRAID_TRY(bootstrap->sendTo(
        peer, std::string(reinterpret_cast<const char*>(blob.bytes), sizeof(blob.bytes))));
    BRAID_INFO(kSubsysInit, "rank %d <- rank %d via %s", rank, peer, t->name());
  }
  // Phase 2: connect to the blob each peer made for this rank.
  for (int peer : peersToConnect) {
    std::string theirs;
    if (ncclResult_t r = bootstrap->recvFrom(peer, &theirs); r != ncclSuccess)
      return addContext(r, "rank %d waiting for rank %d's connection", rank, peer);
    if (theirs.size() != kConnectBlobBytes)
      return fail(ncclInternalError, "rank %d sent a %zu-byte connection for rank %d", peer,
                  theirs.size(), rank);
    ConnectBlob blob;
    memcpy(blob.bytes, theirs.data(), kConnectBlobBytes);
    BRAID_TRY(chooseTransport(ctx, peer)->connectSend(ctx, peer, blob, &sendTo[peer]));
  }
  // What algorithms may assume must hold on every rank, or ranks would choose differently:
  // each rank says whether all its peers are connected and share memory with it, in the round
  // that also tells that every sender is attached.
  // Likewise whether every sender mapped its peer's device slots (a failed IPC open leaves a
  // P2P connection without them: device buffers are then staged on every rank).
  const bool p2pAll = p2pConnectsAll(ctx);
  bool mineAll = true, mineShared = true, mineSlots = true;
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    const bool connected = sendTo[p] && recvFrom[p];
    mineAll = mineAll && connected;
    if (!connected || !sendTo[p]->transport().sharesMemory) mineShared = false;
    if (p2pAll && (!connected || !sendTo[p]->fifo().hasDeviceSlots())) mineSlots = false;
  }
  std::vector<std::string> flags;
  BRAID_TRY(
      bootstrap->allGather(std::string{char(mineAll), char(mineShared), char(mineSlots)}, &flags));
  allPairs = peersShareMemory = true;
  bool allSlots = true;
  for (const std::string& f : flags) {
    allPairs = allPairs && f.size() == 3 && f[0];
    peersShareMemory = peersShareMemory && f.size() == 3 && f[1];
    allSlots = allSlots && f.size() == 3 && f[2];
  }
  // Phase 3: every sender is attached; receivers finish (accept sockets, unlink segments).
  for (int peer : peersToConnect) BRAID_TRY(recvFrom[peer]->finish(ctx));
  overP2p = p2pAll && allSlots;
  return ncclSuccess;
}

ncclResult_t Team::connectPairs(const std::vector<int>& peersToConnect) {
  const TransportContext& ctx = transportContext;
  std::vector<int> todo;
  for (int peer : peersToConnect)
    if (peer != rank && (!sendTo[peer] || !recvFrom[peer])) todo.push_back(peer);
  for (int peer : todo) {
    Transport* t = chooseTransport(ctx, peer);
    if (!t) return fail(ncclSystemError, "no transport can connect rank %d to rank %d", rank, peer);
    ConnectBlob blob{};
    BRAID_TRY(t->setupRecv(ctx, peer, &blob, &recvFrom[peer]));
    BRAID_TRY(bootstrap->sendTo(
        peer, std::string(reinterpret_cast<const char*>(blob.bytes), sizeof(blob.bytes))));
    BRAID_INFO(kSubsysInit, "rank %d <- rank %d via %s (on first use)", rank, peer, t->name());
  }
  for (int peer : todo) {
    std::string theirs;
    if (ncclResult_t r = bootstrap->recvFrom(peer, &theirs); r != ncclSuccess)
      return addContext(r, "connecting rank %d to rank %d on first use", rank, peer);
    if (theirs.size() != kConnectBlobBytes)
      return fail(ncclInternalError, "rank %d sent a %zu-byte connection for rank %d", peer,
                  theirs.size(), rank);
    ConnectBlob blob;
    memcpy(blob.bytes, theirs.data(), kConnectBlobBytes);
    BRAID_TRY(chooseTransport(ctx, peer)->connectSend(ctx, peer, blob, &sendTo[peer]));
    BRAID_TRY(bootstrap->sendTo(peer, "attached"));
  }
  // Each receiver finishes once its sender is attached.
  for (int peer : todo) {
    std::string ack;
    BRAID_TRY(bootstrap->recvFrom(peer, &ack));
    BRAID_TRY(recvFrom[peer]->finish(ctx));
  }
  return ncclSuccess;
}

bool oneRankPerProcess(const std::vector<PeerInfo>& peers) {
  if (peers.size() < 2) return false;
  for (size_t a = 0; a < peers.size(); a++)
    for (size_t b = a + 1; b < peers.size(); b++)
      if (peers[a].processHash == peers[b].processHash) return false;
  return true;
}

void Team::disconnect(bool orderly) {
  sendTo.clear();
  if (orderly && overP2p && oneRankPerProcess() && bootstrap && bootstrap->barrier() != ncclSuccess)
    BRAID_WARN("rank %d: freeing the P2P device slots without the peers' barrier: %s", rank,
               lastError().c_str());
  recvFrom.clear();
  bootstrap.reset();
}

}  // namespace braid
