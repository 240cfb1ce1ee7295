#include "core/team.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "transports/p2p/p2p_transport.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

bool Team::allPairsConnected() const {
  for (int p = 0; p < nranks; p++)
    if (p != rank && (!sendTo[p] || !recvFrom[p])) return false;
  return true;
}

void Team::mapHosts(bool ringByHost) {
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

  ringOrder = ringByHost ? patterns::hostContiguousOrder(hostOf) : std::vector<int>{};
  ringPosition = ringOrder.empty()
                     ? rank
                     : static_cast<int>(std::find(ringOrder.begin(), ringOrder.end(), rank) -
                                        ringOrder.begin());
}

ncclResult_t Team::connect(const TransportContext& ctx, const std::vector<int>& peersToConnect) {
  sendTo.resize(nranks);
  recvFrom.resize(nranks);
  // Phase 1: receiving ends, described by blobs, one entry {peer, blob} per peer.
  std::string mine;
  for (int peer : peersToConnect) {
    Transport* t = chooseTransport(ctx, peer);
    if (!t) return fail(ncclSystemError, "no transport can connect rank %d to rank %d", rank, peer);
    ConnectBlob blob{};
    BRAID_TRY(t->setupRecv(ctx, peer, &blob, &recvFrom[peer]));
    int32_t to = peer;
    mine.append(reinterpret_cast<const char*>(&to), sizeof(to));
    mine.append(reinterpret_cast<const char*>(blob.bytes), sizeof(blob.bytes));
    BRAID_INFO(kSubsysInit, "rank %d <- rank %d via %s", rank, peer, t->name());
  }
  std::vector<std::string> all;
  BRAID_TRY(bootstrap->allGather(mine, &all));
  // Phase 2: connect to the blob each peer made for this rank.
  constexpr size_t kEntry = sizeof(int32_t) + kConnectBlobBytes;
  for (int peer : peersToConnect) {
    const std::string& theirs = all[peer];
    bool found = false;
    for (size_t pos = 0; pos + kEntry <= theirs.size(); pos += kEntry) {
      int32_t to;
      memcpy(&to, theirs.data() + pos, sizeof(to));
      if (to != rank) continue;
      ConnectBlob blob;
      memcpy(blob.bytes, theirs.data() + pos + sizeof(to), kConnectBlobBytes);
      BRAID_TRY(chooseTransport(ctx, peer)->connectSend(ctx, peer, blob, &sendTo[peer]));
      found = true;
    }
    if (!found)
      return fail(ncclInternalError, "rank %d published no connection for rank %d", peer, rank);
  }
  // Phase 3: every sender is attached; receivers finish (accept sockets, unlink segments).
  BRAID_TRY(bootstrap->barrier());
  for (int peer : peersToConnect) BRAID_TRY(recvFrom[peer]->finish(ctx));

  overP2p = p2pConnectsAll(ctx);
  peersShareMemory = true;
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    const std::string t = sendTo[p] && recvFrom[p] ? sendTo[p]->transportName() : "";
    if (t != "shm" && t != "local") peersShareMemory = false;
  }
  return ncclSuccess;
}

void Team::disconnect() {
  sendTo.clear();
  recvFrom.clear();
  bootstrap.reset();
}

}  // namespace braid
