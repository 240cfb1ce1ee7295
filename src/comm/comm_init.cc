// Communicator creation and lifetime: the live set, init (bootstrap, connections, tuner),
// release.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <unordered_set>

#include "comm/communicator.h"
#include "core/host_identity.h"
#include "core/unique_id.h"
#include "device/device_runtime.h"
#include "patterns/tree.h"
#include "transports/net/net_loader.h"
#include "transports/p2p/p2p_transport.h"
#include "tuner/cost_source.h"
#include "util/log.h"
#include "util/settings.h"
#include "util/status.h"

namespace braid {
namespace {

std::mutex liveMutex;
// Bumped (under the mutex) whenever a communicator is freed: a thread that found a pointer live
// since the last bump may trust it again without the lock. Every collective asks, and the lock
// was a measurable part of an 8-byte call.
std::atomic<uint64_t> liveFrees{0};
std::unordered_set<const ncclComm*>& liveSet() {
  static auto* live = new std::unordered_set<const ncclComm*>();
  return *live;
}

// Whether every rank on this host can have a core of its own.
bool coreForEveryRank(const std::vector<PeerInfo>& peers, int rank) {
  int local = 0;
  for (const PeerInfo& p : peers) local += p.hostHash == peers[rank].hostHash;
  return local <= hostCores(peers, rank);
}

// Spinning only pays while every rank on this host has a core of its own; oversubscribed ranks
// must give their core to the peer they wait for.
int chooseSpin(const CommConfig& cfg, const std::vector<PeerInfo>& peers, int rank) {
  if (cfg.spinIters >= 0) return cfg.spinIters;
  return coreForEveryRank(peers, rank) ? 20000 : 50;
}

// Every peer by default, since point-to-point and all-to-all need them;
// BRAID_CONNECT=neighbours limits it to the ring's and trees' neighbours (large jobs, collectives
// only).
std::vector<int> peersToConnect(const ncclComm* comm) {
  if (comm->config.connectNeighboursOnly) return comm->team.neighboursOf(comm->rank());
  std::vector<int> all;
  for (int r = 0; r < comm->nranks(); r++)
    if (r != comm->rank()) all.push_back(r);
  return all;
}

}  // namespace

int initDevice() {
  DeviceRuntime& rt = deviceRuntime();
  int device = -1;
  if (rt.deviceCount() == 0 || rt.currentDevice(&device) != ncclSuccess) return -1;
  return device;
}

ncclComm* commAllocate() {
  auto* comm = new ncclComm();
  std::lock_guard<std::mutex> lock(liveMutex);
  liveSet().insert(comm);
  return comm;
}

bool commIsLive(const ncclComm* comm) {
  thread_local const ncclComm* lastLive = nullptr;
  thread_local uint64_t lastFrees = ~uint64_t(0);
  if (comm == lastLive && liveFrees.load(std::memory_order_acquire) == lastFrees) return true;
  std::lock_guard<std::mutex> lock(liveMutex);
  if (liveSet().count(comm) == 0) return false;
  lastLive = comm;
  lastFrees = liveFrees.load(std::memory_order_relaxed);
  return true;
}

void commFree(ncclComm* comm) {
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    liveSet().erase(comm);
    liveFrees.fetch_add(1, std::memory_order_release);
  }
  comm->magic = 0;
  delete comm;
}

void commDrainStreamWork(ncclComm* comm) {
  while (comm->streamWork.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

void commRelease(ncclComm* comm, bool abort) {
  if (abort) {
    comm->health.abortFlag.store(1);
    comm->device.channels.raiseAbort();  // kernels waiting for a peer give up
  }
  // Non-blocking work still queued runs to its end first (after an abort it fails fast).
  comm->lane.drain();
  if (abort) comm->health.abortCalls();
  // Work queued on host streams still names this communicator (after an abort it fails fast).
  commDrainStreamWork(comm);
  // The kernels' FIFOs go behind a barrier (no peer writes into them or maps them any more).
  comm->device.channels.release(comm->team.bootstrap.get(), abort);
  comm->team.disconnect(/*orderly=*/!abort);
  commFree(comm);
}

ncclResult_t commInit(ncclComm* comm, const ncclUniqueId& id, int nranks, int rank,
                      const ncclConfig_t* config) {
  setLogRank(rank);
  BRAID_TRY(loadConfig(config, &comm->config));
  Team& team = comm->team;
  team.rank = rank;
  team.nranks = nranks;
  team.policy.timeoutS = comm->config.timeoutS;
  team.policy.abort = &comm->health.abortFlag;
  team.policy.spinIters = 2000;
  // As NCCL: the device current when the init call was made (set by the caller), or now.
  BRAID_TRY(deviceRuntime().checkUsable());
  int& cudaDevice = comm->device.cudaDevice;
  if (cudaDevice == kDeviceUnset) cudaDevice = initDevice();

  PeerInfo me = localPeerInfo(rank);
  describeDevice(cudaDevice, &me);
  NetPlugin* network = nullptr;
  BRAID_TRY(selectNetwork(comm->config.netName, &network));
  if (network) snprintf(me.network, sizeof(me.network), "%s", network->name());
  BRAID_INFO(kSubsysInit | kSubsysNet, "Using network %s%s%s",
             network ? network->name() : kInternalNetworkName, network ? " from " : "",
             network ? network->path().c_str() : "");
  // Rank 0's tuner constants ride along: every rank must rank the algorithms alike.
  TunerWire tuner;
  // (Its core count is filled in after the exchange, from every rank's affinity mask.)
  if (rank == 0) tuner = tunerWireFor(hostLinkCosts().costs, 0);
  std::string info(reinterpret_cast<const char*>(&me), sizeof(me));
  info.append(reinterpret_cast<const char*>(&tuner), sizeof(tuner));
  std::vector<std::string> infos;
  BRAID_TRY(Bootstrap::join(id, rank, nranks, info, team.policy, &team.bootstrap, &infos));
  team.peers.resize(nranks);
  for (int r = 0; r < nranks; r++) {
    if (infos[r].size() != sizeof(PeerInfo) + sizeof(TunerWire))
      return fail(ncclInvalidUsage, "rank %d runs an incompatible Braid (peer info size %zu)", r,
                  infos[r].size());
    memcpy(&team.peers[r], infos[r].data(), sizeof(PeerInfo));
  }
  memcpy(&tuner, infos[0].data() + sizeof(PeerInfo), sizeof(tuner));
  // Cores as all of rank 0's host's ranks see them together: one pinned rank sees one core.
  tuner.cores = hostCores(team.peers, 0);
  team.policy.spinIters = chooseSpin(comm->config, team.peers, rank);
  team.policy.sleepWhenPeerHere = coreForEveryRank(team.peers, rank);
  team.mapHosts(comm->config.ringByHost, comm->config.rings);
  using Connect = CommConfig::Connect;
  const Connect mode = comm->config.connect;
  const bool beyondAllPairs = nranks > comm->config.connectAllMaxRanks;
  comm->config.connectNeighboursOnly =
      mode == Connect::kNeighbours || (mode == Connect::kAuto && beyondAllPairs);
  comm->config.connectOnFirstUse = mode == Connect::kAuto && beyondAllPairs;

  UniqueIdFields f;
  memcpy(&f, id.internal, sizeof(f));
  team.commHash = f.nonce;
  comm->recorder.configure(comm->config.flightRecorderSize, rank, nranks, team.commHash, comm);
  if (comm->config.sigusr1Dump) installSignalDump();
  comm->ops.sendSeq.assign(nranks, 0);
  comm->ops.recvSeq.assign(nranks, 0);

  TransportContext ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.peers = &team.peers;
  memcpy(ctx.secret, f.secret, sizeof(ctx.secret));
  ctx.commHash = team.commHash;
  ctx.policy = team.policy;
  ctx.nslots = comm->config.nslots;
  ctx.slotBytes = comm->config.slotBytes;
  ctx.tcpSockets = comm->config.tcpSockets;
  ctx.tcpBufferBytes = comm->config.tcpBufferBytes;
  ctx.tcpInlineBytes = comm->config.tcpInlineBytes;
  ctx.allowed = comm->config.transports;
  ctx.cudaDevice = cudaDevice;
  ctx.net = network;
  const std::vector<int> peers = peersToConnect(comm);
  bool needTcp = false;
  // Pairs connected on first use may need TCP too: the interface is found now, not mid-call.
  std::vector<int> everyone;
  for (int r = 0; r < nranks; r++)
    if (r != rank) everyone.push_back(r);
  for (int peer : comm->config.connectOnFirstUse ? everyone : peers)
    if (Transport* t = chooseTransport(ctx, peer); t && t->traits().usesInterfaces) needTcp = true;
  if (needTcp) BRAID_TRY(findInterfaceAddresses(&ctx.tcpAddresses, nullptr, kMaxTcpInterfaces));
  CommCostModel model = commCostModel(tuner, team.peers, ctx.allowed);
  model.slotBytes = static_cast<double>(comm->config.slotBytes);
  comm->tuner.configure(model, comm->config, nranks);
  BRAID_INFO(kSubsysTune,
             "comm %p rank %d tuner: %s alpha %.3g us, %.3g GB/s, reduce %.3g GB/s, "
             "%.2f ranks per core",
             static_cast<void*>(comm), rank, linkClassName(model.link), model.cost.alphaUs,
             model.cost.gbps, model.cost.reduceGbps, model.oversubscribe);
  team.transportContext = ctx;
  BRAID_TRY(team.connect(ctx, peers));
  // Collective kernels where every pair of ranks reaches the other's GPU memory
  // (BRAID_DEVICE_KERNELS=0: host-driven steps instead).
  if (team.overP2p && cudaDevice >= 0 && settingInt(Setting::kDeviceKernels) != 0)
    BRAID_TRY(comm->device.channels.setup(*team.bootstrap, team.peers, rank, cudaDevice,
                                          DeviceChannelShape::fromEnvironment()));
  team.policy.progress = &team.pullEveryReceive;
  comm->health.initialized = true;
  BRAID_INFO(kSubsysInit,
             "comm %p rank %d nranks %d pid %d cudaDev %d - Init COMPLETE (spin %d, device "
             "buffers %s)",
             static_cast<void*>(comm), rank, nranks, me.pid, cudaDevice, team.policy.spinIters,
             comm->device.channels.ready() ? "by collective kernels"
             : team.overP2p                ? "over p2p"
                                           : "staged through the host");
  return ncclSuccess;
}

}  // namespace braid
