#include "comm/shrink.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/unique_id.h"
#include "patterns/tree.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr uint64_t kMessageMagic = 0x4272645368726e6bull;  // "BrdShrnk"
constexpr uint32_t kMessageTag = 0x5348524bu;              // slot tag of a shrink message ("SHRK")

enum MessageKind : uint32_t {
  kReady = 1,  ///< survivor -> first survivor: here, with this list
  kOffer = 2,  ///< first survivor -> survivor: the new id (or why there is none)
};

// A shrink message travels in one slot of a parent connection. It says enough about the call for
// a receiver to tell it from stale slots of an interrupted operation (or of an earlier shrink)
// and to check that both ranks excluded the same ranks.
struct ShrinkMessage {
  uint64_t magic;
  uint64_t parentHash;
  uint32_t shrinkSeq;
  uint32_t kind;
  int32_t survivors;
  int32_t disagreeing;  ///< offer: -1, or a survivor whose list differs (then no id)
  uint64_t excludedHash;
  unsigned char id[NCCL_UNIQUE_ID_BYTES];
};

uint64_t hashRanks(const std::vector<int>& ranks) {
  uint64_t h = 1469598103934665603ull;
  for (int r : ranks)
    for (int i = 0; i < 4; i++)
      h = (h ^ ((static_cast<uint32_t>(r) >> (8 * i)) & 0xff)) * 1099511628211ull;
  return h;
}

ncclResult_t post(ncclComm* parent, int peer, const ShrinkMessage& m, const WaitPolicy& policy) {
  if (!parent->team.sendTo[peer])
    return fail(ncclInternalError, "shrink: rank %d has no connection to rank %d", parent->rank(),
                peer);
  FifoSender& fifo = parent->team.sendTo[peer]->fifo();
  void* slot;
  if (ncclResult_t r = fifo.acquire(policy, &slot); r != ncclSuccess)
    return addContext(r, "shrink: rank %d sending to rank %d", parent->rank(), peer);
  memcpy(slot, &m, sizeof(m));
  fifo.post(sizeof(m), kMessageTag);
  return ncclSuccess;
}

// Reads `peer`'s slots in order; slots an interrupted operation left behind (or messages of an
// earlier shrink) are released unread until this shrink's message of `kind` arrives.
ncclResult_t receive(ncclComm* parent, int peer, uint32_t kind, uint32_t seq,
                     const WaitPolicy& policy, ShrinkMessage* m) {
  if (!parent->team.recvFrom[peer])
    return fail(ncclInternalError, "shrink: rank %d has no connection from rank %d", parent->rank(),
                peer);
  FifoReceiver& fifo = parent->team.recvFrom[peer]->fifo();
  size_t skipped = 0;
  for (;;) {
    const void* slot;
    SlotInfo info;
    if (ncclResult_t r = fifo.wait(policy, &slot, &info); r != ncclSuccess)
      return addContext(r, "shrink: rank %d waiting for rank %d", parent->rank(), peer);
    bool mine = false;
    if (info.tag == kMessageTag && info.bytes == sizeof(ShrinkMessage)) {
      memcpy(m, slot, sizeof(*m));
      mine = m->magic == kMessageMagic && m->parentHash == parent->team.commHash &&
             m->shrinkSeq == seq && m->kind == kind;
    }
    fifo.release();
    if (mine) break;
    skipped++;
  }
  if (skipped)
    BRAID_INFO(kSubsysInit, "shrink: rank %d skipped %zu stale slots from rank %d", parent->rank(),
               skipped, peer);
  return ncclSuccess;
}

// The first survivor hears from every other survivor, then hosts the new id and hands it out.
// Waiting for everyone first keeps the new rendezvous from starting (and timing out) while a
// survivor is still inside the failed operation.
ncclResult_t leadExchange(ncclComm* parent, const std::vector<int>& survivors,
                          const ShrinkMessage& mine, const WaitPolicy& policy,
                          ShrinkMessage* offer) {
  int disagreeing = -1;
  for (size_t i = 1; i < survivors.size(); i++) {
    ShrinkMessage ready;
    BRAID_TRY(receive(parent, survivors[i], kReady, mine.shrinkSeq, policy, &ready));
    if (disagreeing < 0 &&
        (ready.survivors != mine.survivors || ready.excludedHash != mine.excludedHash))
      disagreeing = survivors[i];
  }
  *offer = mine;
  offer->kind = kOffer;
  offer->disagreeing = disagreeing;
  if (disagreeing < 0) {
    ncclUniqueId id;
    BRAID_TRY(newHostedUniqueId(&id));
    memcpy(offer->id, id.internal, sizeof(offer->id));
  }
  for (size_t i = 1; i < survivors.size(); i++)
    BRAID_TRY(post(parent, survivors[i], *offer, policy));
  if (disagreeing >= 0)
    return fail(ncclInvalidUsage,
                "shrink: rank %d passed a different excludeRanksList than rank %d: every "
                "survivor must exclude the same ranks",
                disagreeing, parent->rank());
  return ncclSuccess;
}

}  // namespace

void commRevoke(ncclComm* comm) {
  comm->health.revoked.store(1);
  comm->health.abortFlag.store(1);
  // Calls in progress and queued background work (non-blocking queue, host streams) notice the
  // flag within a sleep slice and end.
  comm->lane.drain();
  commDrainStreamWork(comm);
  comm->health.abortCalls();
  // Quiesced: the flag goes down again so shrink and split can still use the connections, and,
  // as in NCCL, the revoked communicator's state reads ncclSuccess.
  comm->health.abortFlag.store(0);
  comm->health.clearError();
}

ncclResult_t commShrink(ncclComm* parent, const std::vector<int>& excluded,
                        const ncclConfig_t* config, ncclComm** out) {
  *out = nullptr;
  const uint32_t seq = ++parent->shrinkCount;
  std::vector<int> survivors;
  for (int r = 0; r < parent->nranks(); r++)
    if (!std::binary_search(excluded.begin(), excluded.end(), r)) survivors.push_back(r);
  const int nSurvivors = static_cast<int>(survivors.size());
  const int newRank = static_cast<int>(
      std::lower_bound(survivors.begin(), survivors.end(), parent->rank()) - survivors.begin());
  const int leader = survivors[0];
  // Every rank reaches the same verdict: it depends only on the (shared) connection setting.
  if (parent->config.connectNeighboursOnly) {
    std::vector<int> linked = parent->team.neighboursOf(leader);
    for (int s : survivors)
      if (s != leader && std::find(linked.begin(), linked.end(), s) == linked.end())
        return fail(ncclInvalidUsage,
                    "shrink: rank %d (the first survivor) is not connected to rank %d under "
                    "BRAID_CONNECT=neighbours (or auto beyond %d ranks); shrink needs every pair "
                    "connected at init: BRAID_CONNECT=all",
                    leader, s, parent->config.connectAllMaxRanks);
  }
  // A survivor may still be inside the failed operation for up to one deadline (it waits on a
  // peer that has already left), so the others may wait that much longer here.
  WaitPolicy policy = parent->team.policy;
  policy.timeoutS = parent->team.policy.timeoutS > 0 ? 2 * parent->team.policy.timeoutS + 1 : 0;

  ShrinkMessage message{};
  message.magic = kMessageMagic;
  message.parentHash = parent->team.commHash;
  message.shrinkSeq = seq;
  message.kind = kReady;
  message.survivors = nSurvivors;
  message.disagreeing = -1;
  message.excludedHash = hashRanks(excluded);
  ShrinkMessage offer;
  if (parent->rank() == leader) {
    BRAID_TRY(leadExchange(parent, survivors, message, policy, &offer));
  } else {
    BRAID_TRY(post(parent, leader, message, policy));
    BRAID_TRY(receive(parent, leader, kOffer, seq, policy, &offer));
    if (offer.disagreeing >= 0)
      return fail(ncclInvalidUsage,
                  "shrink: rank %d passed a different excludeRanksList than rank %d: every "
                  "survivor must exclude the same ranks",
                  offer.disagreeing, leader);
  }
  ncclUniqueId id;
  memcpy(id.internal, offer.id, sizeof(id.internal));

  ncclConfig_t inherited = NCCL_CONFIG_INITIALIZER;
  if (!config) {
    inherited.blocking = parent->config.blocking;
    if (!parent->config.commName.empty()) inherited.commName = parent->config.commName.c_str();
    config = &inherited;
  }
  ncclComm* comm = commAllocate();
  comm->device.cudaDevice =
      parent->device.cudaDevice;  // as NCCL: the child keeps the parent's device
  ncclResult_t r = commInit(comm, id, nSurvivors, newRank, config);
  if (r != ncclSuccess) {
    commFree(comm);
    return addContext(r, "shrink of rank %d (new rank %d of %d)", parent->rank(), newRank,
                      nSurvivors);
  }
  BRAID_INFO(kSubsysInit, "shrink: rank %d of %d is rank %d of %d in comm %p", parent->rank(),
             parent->nranks(), newRank, nSurvivors, static_cast<void*>(comm));
  *out = comm;
  return ncclSuccess;
}

}  // namespace braid
