// The P2P transport (p2p_transport.h).
#include "transports/p2p/p2p_transport.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "device/device_runtime.h"
#include "util/log.h"
#include "util/settings.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr uint64_t kBlobMagic = 0x7032702d736c6f74ull;  // "p2p-slot"

struct P2pBlob {
  uint64_t magic;
  uint64_t processHash;  ///< the receiver's process: the same one passes `slots` itself
  uint64_t bytes;
  uint64_t deviceId;
  void* slots;
  IpcHandle handle;  ///< for a sender in another process
};
// The host transport's blob comes first, the device slots' description after it.
static_assert(kCarriedBlobBytes + sizeof(P2pBlob) <= kConnectBlobBytes);

/// Slots this rank allocated (receiver) or mapped from another process (sender); a sender in
/// the receiver's process borrows the pointer and owns nothing.
class SlotMemory final : public DeviceSlotMemory {
 public:
  enum class Kind { kAllocated, kMapped };
  SlotMemory(DeviceRuntime* runtime, void* p, Kind kind) : runtime_(runtime), p_(p), kind_(kind) {}
  ~SlotMemory() override {
    if (kind_ == Kind::kAllocated)
      runtime_->freeDevice(p_);
    else
      runtime_->closeMemory(p_);
  }

 private:
  DeviceRuntime* runtime_;  ///< the runtime that made it (a test may install another later)
  void* p_;
  Kind kind_;
};

bool allowed(const TransportContext& ctx) {
  if (settingInt(Setting::kNcclP2pDisable) == 1) return false;
  return ctx.allowed.empty() ||
         std::find(ctx.allowed.begin(), ctx.allowed.end(), "p2p") != ctx.allowed.end();
}

bool reaches(const PeerInfo& from, const PeerInfo& to) {
  if (from.deviceId == to.deviceId) return true;
  for (uint64_t id : from.reachable)
    if (id == to.deviceId) return true;
  return false;
}

bool pairCanConnect(const TransportContext& ctx, const PeerInfo& a, const PeerInfo& b) {
  if (a.deviceId == 0 || b.deviceId == 0 || a.hostHash != b.hostHash) return false;
  if (!reaches(a, b) || !reaches(b, a)) return false;
  // The control words need memory both ends map.
  TransportContext host = ctx;
  host.rank = a.rank;
  Transport* t = chooseHostTransport(host, b.rank);
  return t && t->traits().sharesMemory;
}

}  // namespace

void describeDevice(int device, PeerInfo* info) {
  info->cudaDevice = device;
  if (device < 0) return;
  DeviceRuntime& rt = deviceRuntime();
  info->deviceId = rt.deviceIdentity(device);
  if (info->deviceId == 0) return;
  size_t n = 0;
  const int devices = rt.deviceCount();
  for (int d = 0; d < devices && n < std::size(info->reachable); d++)
    if (d != device && rt.canAccessPeer(device, d))
      if (uint64_t id = rt.deviceIdentity(d)) info->reachable[n++] = id;
}

bool p2pConnectsAll(const TransportContext& ctx) {
  if (!allowed(ctx)) return false;
  const std::vector<PeerInfo>& peers = *ctx.peers;
  for (int a = 0; a < ctx.nranks; a++) {
    if (peers[a].deviceId == 0) return false;
    for (int b = a + 1; b < ctx.nranks; b++)
      if (!pairCanConnect(ctx, peers[a], peers[b])) return false;
  }
  return true;
}

namespace {

// Receiving side: allocates the device slots for `conn` and describes them in `out`.
ncclResult_t setupDeviceSlots(const TransportContext& ctx, int peer, RecvConnection& conn,
                              P2pBlob* out) {
  DeviceRuntime& rt = deviceRuntime();
  const size_t bytes = static_cast<size_t>(conn.fifo().nslots()) * conn.fifo().slotBytes();
  void* slots = nullptr;
  if (ncclResult_t r = rt.allocDevice(ctx.cudaDevice, bytes, &slots); r != ncclSuccess)
    return addContext(r, "p2p transport: %zu bytes of device slots for rank %d on device %d", bytes,
                      peer, ctx.cudaDevice);
  conn.deviceSlots = std::make_unique<SlotMemory>(&rt, slots, SlotMemory::Kind::kAllocated);
  conn.fifo().setDeviceSlots(static_cast<char*>(slots));
  const PeerInfo& me = (*ctx.peers)[ctx.rank];
  P2pBlob b{};
  b.magic = kBlobMagic;
  b.processHash = me.processHash;
  b.bytes = bytes;
  b.deviceId = me.deviceId;
  b.slots = slots;
  if ((*ctx.peers)[peer].processHash != me.processHash) {
    if (ncclResult_t r = rt.exportMemory(slots, &b.handle); r != ncclSuccess)
      return addContext(r, "p2p transport: exporting device slots for rank %d", peer);
  }
  *out = b;
  return ncclSuccess;
}

// Sending side: maps the slots `b` describes and attaches them to `conn`.
ncclResult_t attachDeviceSlots(const TransportContext& ctx, int peer, SendConnection& conn,
                               const P2pBlob& b) {
  const PeerInfo& me = (*ctx.peers)[ctx.rank];
  const PeerInfo& them = (*ctx.peers)[peer];
  if (b.magic != kBlobMagic || b.deviceId != them.deviceId)
    return fail(ncclInternalError, "p2p transport: rank %d published no device slots for rank %d",
                peer, ctx.rank);
  const size_t bytes = static_cast<size_t>(conn.fifo().nslots()) * conn.fifo().slotBytes();
  if (b.bytes != bytes)
    return fail(ncclInvalidUsage,
                "p2p transport: rank %d's device slots hold %llu bytes, rank %d's FIFO %zu "
                "(BRAID_NSLOTS or BRAID_SLOT_BYTES differ between the ranks)",
                peer, static_cast<unsigned long long>(b.bytes), ctx.rank, bytes);
  DeviceRuntime& rt = deviceRuntime();
  void* slots = b.slots;
  if (b.processHash == me.processHash) {
    // Threads of one process: the pointer itself, once this device may reach the peer's.
    if (ncclResult_t r = rt.enablePeerAccess(ctx.cudaDevice, them.cudaDevice); r != ncclSuccess)
      return addContext(r, "p2p transport: peer access from device %d to device %d (rank %d)",
                        ctx.cudaDevice, them.cudaDevice, peer);
  } else {
    if (rt.openMemory(ctx.cudaDevice, b.handle, &slots) != ncclSuccess) {
      // Not fatal: the connection carries host data as its host transport does, and the
      // communicator stages device buffers through the host instead (Team::connect sees that a
      // sender has no device slots; every rank then agrees).
      BRAID_WARN(
          "p2p transport: rank %d cannot map rank %d's device slots (pid %d): %s; device "
          "buffers will be staged through the host",
          ctx.rank, peer, them.pid, lastError().c_str());
      return ncclSuccess;
    }
    conn.deviceSlots = std::make_unique<SlotMemory>(&rt, slots, SlotMemory::Kind::kMapped);
  }
  conn.fifo().setDeviceSlots(static_cast<char*>(slots));
  return ncclSuccess;
}

// Rides on a local or shm connection (whose FIFO it extends with device slots): its control
// words are in memory both ends map. name, link class, shares memory, same process, uses
// interfaces, carries device slots.
constexpr TransportTraits kP2pTraits = {"p2p", LinkClass::kShm, true, false, false, true};

class P2pTransport : public Transport {
 public:
  const TransportTraits& traits() const override { return kP2pTraits; }
  bool canConnect(const TransportContext& ctx, int peer) const override {
    if (!allowed(ctx)) return false;
    const std::vector<PeerInfo>& peers = *ctx.peers;
    return pairCanConnect(ctx, peers[ctx.rank], peers[peer]);
  }
  ncclResult_t setupRecv(const TransportContext& ctx, int peer, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    ConnectBlob host{};
    BRAID_TRY(chooseHostTransport(ctx, peer)->setupRecv(ctx, peer, &host, conn));
    P2pBlob b;
    BRAID_TRY(setupDeviceSlots(ctx, peer, **conn, &b));
    memcpy(blob->bytes, host.bytes, kCarriedBlobBytes);
    memcpy(blob->bytes + kCarriedBlobBytes, &b, sizeof(b));
    return ncclSuccess;
  }
  ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                           std::unique_ptr<SendConnection>* conn) override {
    ConnectBlob host{};
    memcpy(host.bytes, blob.bytes, kCarriedBlobBytes);
    BRAID_TRY(chooseHostTransport(ctx, peer)->connectSend(ctx, peer, host, conn));
    P2pBlob b;
    memcpy(&b, blob.bytes + kCarriedBlobBytes, sizeof(b));
    return attachDeviceSlots(ctx, peer, **conn, b);
  }
};

}  // namespace

Transport* p2pTransport() {
  static P2pTransport t;
  return &t;
}

}  // namespace braid
