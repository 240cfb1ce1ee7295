#include "core/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "algorithms/tuner_source.h"
#include "core/host_identity.h"
#include "core/unique_id.h"
#include "patterns/tree.h"
#include "transports/p2p/p2p_transport.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

std::mutex registryMutex;
// Bumped (under the mutex) whenever a communicator is freed: a thread that found a pointer live
// since the last bump may trust it again without the lock. Every collective asks, and the lock
// was a measurable part of an 8-byte call.
std::atomic<uint64_t> registryFrees{0};
std::unordered_set<const ncclComm*>& registry() {
  static auto* live = new std::unordered_set<const ncclComm*>();
  return *live;
}

// Spinning only pays while every rank on this host has a core of its own; oversubscribed ranks
// must give their core to the peer they wait for.
int chooseSpin(const CommConfig& cfg, const std::vector<PeerInfo>& peers, int rank) {
  if (cfg.spinIters >= 0) return cfg.spinIters;
  int local = 0;
  for (const PeerInfo& p : peers) local += p.hostHash == peers[rank].hostHash;
  return local <= hostCores(peers, rank) ? 20000 : 50;
}

// Every peer by default, since point-to-point and all-to-all need them;
// BRAID_CONNECT=neighbours limits it to the ring's and trees' neighbours (large jobs, collectives
// only).
std::vector<int> peersToConnect(const ncclComm* comm) {
  if (comm->config.connectNeighboursOnly) return patterns::neighbourRanks(comm->rank, comm->nranks);
  std::vector<int> all;
  for (int r = 0; r < comm->nranks; r++)
    if (r != comm->rank) all.push_back(r);
  return all;
}

ncclResult_t connectPeers(ncclComm* comm, TransportContext& ctx) {
  std::vector<int> neighbours = peersToConnect(comm);
  comm->sendTo.resize(comm->nranks);
  comm->recvFrom.resize(comm->nranks);
  comm->p2pSendSeq.assign(comm->nranks, 0);
  comm->p2pRecvSeq.assign(comm->nranks, 0);
  // Phase 1: receiving ends, described by blobs.
  std::string mine;
  for (int peer : neighbours) {
    Transport* t = chooseTransport(ctx, peer);
    if (!t)
      return fail(ncclSystemError, "no transport can connect rank %d to rank %d", comm->rank, peer);
    ConnectBlob blob{}, deviceBlob{};
    BRAID_TRY(t->setupRecv(ctx, peer, &blob, &comm->recvFrom[peer]));
    const bool p2p = p2pCanConnect(ctx, peer);
    if (p2p) BRAID_TRY(p2pSetupRecv(ctx, peer, *comm->recvFrom[peer], &deviceBlob));
    int32_t to = peer;
    mine.append(reinterpret_cast<const char*>(&to), sizeof(to));
    mine.append(reinterpret_cast<const char*>(blob.bytes), sizeof(blob.bytes));
    mine.append(reinterpret_cast<const char*>(deviceBlob.bytes), sizeof(deviceBlob.bytes));
    BRAID_INFO(kSubsysInit, "rank %d <- rank %d via %s%s", comm->rank, peer, t->name(),
               p2p ? " + p2p (device slots)" : "");
  }
  std::vector<std::string> all;
  BRAID_TRY(comm->bootstrap->allGather(mine, &all));
  // Phase 2: connect to the blob each neighbour made for us.
  for (int peer : neighbours) {
    const std::string& theirs = all[peer];
    const size_t entry = sizeof(int32_t) + 2 * kConnectBlobBytes;
    bool found = false;
    for (size_t pos = 0; pos + entry <= theirs.size(); pos += entry) {
      int32_t to;
      memcpy(&to, theirs.data() + pos, sizeof(to));
      if (to != comm->rank) continue;
      ConnectBlob blob;
      memcpy(blob.bytes, theirs.data() + pos + sizeof(to), kConnectBlobBytes);
      Transport* t = chooseTransport(ctx, peer);
      BRAID_TRY(t->connectSend(ctx, peer, blob, &comm->sendTo[peer]));
      if (p2pCanConnect(ctx, peer)) {
        ConnectBlob deviceBlob;
        memcpy(deviceBlob.bytes, theirs.data() + pos + sizeof(to) + kConnectBlobBytes,
               kConnectBlobBytes);
        BRAID_TRY(p2pConnectSend(ctx, peer, *comm->sendTo[peer], deviceBlob));
      }
      found = true;
    }
    if (!found)
      return fail(ncclInternalError, "rank %d published no connection for rank %d", peer,
                  comm->rank);
  }
  // Phase 3: every sender is attached; receivers finish (accept sockets, unlink segments).
  BRAID_TRY(comm->bootstrap->barrier());
  for (int peer : neighbours) BRAID_TRY(comm->recvFrom[peer]->finish(ctx));
  return ncclSuccess;
}

}  // namespace

ncclComm* commAllocate() {
  auto* comm = new ncclComm();
  std::lock_guard<std::mutex> lock(registryMutex);
  registry().insert(comm);
  return comm;
}

bool commIsLive(const ncclComm* comm) {
  thread_local const ncclComm* lastLive = nullptr;
  thread_local uint64_t lastFrees = ~uint64_t(0);
  if (comm == lastLive && registryFrees.load(std::memory_order_acquire) == lastFrees) return true;
  std::lock_guard<std::mutex> lock(registryMutex);
  if (registry().count(comm) == 0) return false;
  lastLive = comm;
  lastFrees = registryFrees.load(std::memory_order_relaxed);
  return true;
}

void commFree(ncclComm* comm) {
  {
    std::lock_guard<std::mutex> lock(registryMutex);
    registry().erase(comm);
    registryFrees.fetch_add(1, std::memory_order_release);
  }
  comm->magic = 0;
  delete comm;
}

void commSetError(ncclComm* comm, ncclResult_t code, const std::string& text) {
  std::lock_guard<std::mutex> lock(comm->errorMutex);
  if (comm->asyncError.load() == ncclSuccess || comm->asyncError.load() == ncclInProgress) {
    comm->errorText = text;
    comm->asyncError.store(code);
  }
}

ncclResult_t commInit(ncclComm* comm, const ncclUniqueId& id, int nranks, int rank,
                      const ncclConfig_t* config) {
  setLogRank(rank);
  BRAID_TRY(loadConfig(config, &comm->config));
  comm->rank = rank;
  comm->nranks = nranks;
  comm->policy.timeoutS = comm->config.timeoutS;
  comm->policy.abort = &comm->abortFlag;
  comm->policy.spinIters = 2000;
  // As NCCL: the device current when the init call was made (set by the caller), or now.
  if (comm->cudaDevice == kDeviceUnset) comm->cudaDevice = initDevice();

  PeerInfo me = localPeerInfo(rank);
  describeDevice(comm->cudaDevice, &me);
  // Rank 0's tuner constants ride along: every rank must rank the algorithms alike.
  TunerWire tuner;
  // (Its core count is filled in after the exchange, from every rank's affinity mask.)
  if (rank == 0) tuner = tunerWireFor(hostLinkCosts().costs, 0);
  std::string info(reinterpret_cast<const char*>(&me), sizeof(me));
  info.append(reinterpret_cast<const char*>(&tuner), sizeof(tuner));
  std::vector<std::string> infos;
  BRAID_TRY(Bootstrap::join(id, rank, nranks, info, comm->policy, &comm->bootstrap, &infos));
  comm->peers.resize(nranks);
  for (int r = 0; r < nranks; r++) {
    if (infos[r].size() != sizeof(PeerInfo) + sizeof(TunerWire))
      return fail(ncclInvalidUsage, "rank %d runs an incompatible Braid (peer info size %zu)", r,
                  infos[r].size());
    memcpy(&comm->peers[r], infos[r].data(), sizeof(PeerInfo));
  }
  memcpy(&tuner, infos[0].data() + sizeof(PeerInfo), sizeof(tuner));
  // Cores as all of rank 0's host's ranks see them together: one pinned rank sees one core.
  tuner.cores = hostCores(comm->peers, 0);
  comm->policy.spinIters = chooseSpin(comm->config, comm->peers, rank);

  UniqueIdFields f;
  memcpy(&f, id.internal, sizeof(f));
  comm->commHash = f.nonce;
  comm->recorder.configure(comm->config.flightRecorderSize, rank, nranks, comm->commHash, comm);
  if (comm->config.sigusr1Dump) installSignalDump();

  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.peers = &comm->peers;
  memcpy(ctx.secret, f.secret, sizeof(ctx.secret));
  ctx.commHash = comm->commHash;
  ctx.policy = comm->policy;
  ctx.nslots = comm->config.nslots;
  ctx.slotBytes = comm->config.slotBytes;
  ctx.tcpSockets = comm->config.tcpSockets;
  ctx.tcpBufferBytes = comm->config.tcpBufferBytes;
  ctx.allowed = comm->config.transports;
  ctx.cudaDevice = comm->cudaDevice;
  bool needTcp = false;
  for (int peer : peersToConnect(comm))
    if (Transport* t = chooseTransport(ctx, peer); t && std::string(t->name()) == "tcp")
      needTcp = true;
  if (needTcp) BRAID_TRY(findInterfaceAddress(&ctx.tcpAddress, nullptr));
  comm->costModel = commCostModel(tuner, comm->peers, ctx.allowed);
  comm->costModel.slotBytes = static_cast<double>(comm->config.slotBytes);
  BRAID_INFO(kSubsysTune,
             "comm %p rank %d tuner: %s alpha %.3g us, %.3g GB/s, reduce %.3g GB/s, "
             "%.2f ranks per core",
             static_cast<void*>(comm), rank, linkClassName(comm->costModel.link),
             comm->costModel.cost.alphaUs, comm->costModel.cost.gbps,
             comm->costModel.cost.reduceGbps, comm->costModel.oversubscribe);
  BRAID_TRY(connectPeers(comm, ctx));
  comm->deviceDirect = p2pConnectsAll(ctx);
  comm->peersShareMemory = true;
  for (int p = 0; p < nranks; p++) {
    if (p == rank) continue;
    const bool connected = comm->sendTo[p] && comm->recvFrom[p];
    const std::string t = connected ? comm->sendTo[p]->transportName() : "";
    if (t != "shm" && t != "local") comm->peersShareMemory = false;
  }
  // Proxy threads move TCP data: a rank spinning on a core they need only delays them.
  for (auto& c : comm->sendTo)
    if (c && comm->config.spinIters < 0 && std::string(c->transportName()) == "tcp")
      comm->policy.spinIters = std::min(comm->policy.spinIters, 100);
  comm->initialized = true;
  BRAID_INFO(kSubsysInit,
             "comm %p rank %d nranks %d pid %d cudaDev %d - Init COMPLETE (spin %d, device "
             "buffers %s)",
             static_cast<void*>(comm), rank, nranks, me.pid, comm->cudaDevice,
             comm->policy.spinIters, comm->deviceDirect ? "over p2p" : "staged through the host");
  return ncclSuccess;
}

}  // namespace braid
