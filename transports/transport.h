// The transport interface. A transport connects this rank to one peer in one direction and hands
// the algorithms a FIFO end (fifo.h); the algorithms never see which transport it is. Setup has two
// phases so the bootstrap can exchange an opaque blob in between:
//   receiver: setupRecv() fills a ConnectBlob  ->  bootstrap all-to-all  ->  sender: connectSend()
//   then, after a barrier, every RecvConnection::finish() (accept sockets, unlink segments).
// Transports are tried in priority order (transport_registry.cc); the first whose canConnect() is
// true wins. A transport that carries device slots (P2P) rides on the host transport the pair
// would otherwise use, which keeps the FIFO's control words in memory both ends map.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"
#include "transports/fifo.h"
#include "util/socket.h"
#include "util/wait.h"

namespace braid {

class NetPlugin;

/// What a rank tells every other rank about itself during bootstrap.
struct PeerInfo {
  int32_t rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;      ///< same host (hostname + boot id + network namespace)
  uint64_t processHash = 0;   ///< same process (host + pid + process start time)
  uint64_t pidStartTime = 0;  ///< to tell a live peer from a reused pid
  /// The CPUs this process may run on (its affinity mask, CPUs 0-1023): the ranks of a host
  /// together tell how many cores they share, whether each is pinned to one or not.
  uint64_t cpus[16] = {};
  char hostname[64] = {};
  /// The rank's CUDA device: its index in the rank's process (-1: none) and its identity
  /// (DeviceRuntime::deviceIdentity, 0: none), plus the identities of the devices it can reach
  /// with peer access. The P2P transport connects two ranks from these alone.
  int32_t cudaDevice = -1;
  uint64_t deviceId = 0;
  uint64_t reachable[8] = {};
  /// The plugin network the rank crosses hosts with (NCCL_NET_PLUGIN/NCCL_NET; "": Braid's own
  /// TCP). Two ranks use the net transport only when they name the same one.
  char network[16] = {};
};

constexpr size_t kConnectBlobBytes = 256;
/// Interfaces a TCP connection's sockets spread over (what fits the connect blob).
constexpr size_t kMaxTcpInterfaces = 4;
/// The part of a blob a host-memory transport may use when another transport carries its blob
/// inside its own (the P2P transport puts its device-slot description in the rest).
constexpr size_t kCarriedBlobBytes = 128;
struct ConnectBlob {
  unsigned char bytes[kConnectBlobBytes];
};

/// Per-communicator facts a transport needs while connecting.
struct TransportContext {
  int rank = 0;
  int nranks = 0;
  const std::vector<PeerInfo>* peers = nullptr;
  unsigned char secret[16] = {};
  uint64_t commHash = 0;
  WaitPolicy policy;
  uint32_t nslots = 8;
  size_t slotBytes = 512 * 1024;
  int tcpSockets = 2;  ///< sockets per TCP connection
  int tcpBufferBytes = 4 << 20;
  size_t tcpInlineBytes = 512 << 10;  ///< larger TCP slots leave from the connection's thread
  /// This rank's interface addresses (port 0): NCCL_SOCKET_IFNAME's matches, at most
  /// kMaxTcpInterfaces; a TCP connection spreads its sockets over them.
  std::vector<SockAddr> tcpAddresses;
  std::vector<std::string> allowed;  ///< BRAID_TRANSPORTS / NCCL_SHM_DISABLE filtering
  int cudaDevice = -1;               ///< the communicator's CUDA device (-1: none)
  NetPlugin* net = nullptr;          ///< the plugin network chosen (null: Braid's own TCP)
};

/// The cost class of a link, as the tuner's tables have it: same process, shared memory on one
/// host, or a network (Braid's TCP or a net plugin's).
enum class LinkClass { kLocal, kShm, kTcp };

/// What a transport is, for the code above the transports, which never compares names: its
/// registration says it once (transport_registry.cc; the recipe is docs/design.md, "Adding a
/// transport", and unit.TransportTraits checks every registered one).
struct TransportTraits {
  const char* name;         ///< BRAID_TRANSPORTS' word, and what logs and tests print
  LinkClass link;           ///< the tuner's cost class
  bool sharesMemory;        ///< both ends map the FIFO's memory (control words, device slots)
  bool sameProcess;         ///< the peer's FIFO object lives in the peer's communicator
  bool usesInterfaces;      ///< connects over NCCL_SOCKET_IFNAME's addresses
  bool carriesDeviceSlots;  ///< adds device slots to a host transport's connection (P2P)
};

/// GPU memory a connection holds for device-buffer traffic (transports/p2p); released with it.
class DeviceSlotMemory {
 public:
  virtual ~DeviceSlotMemory() = default;
};

/// One direction to one peer, sending side.
class SendConnection {
 public:
  virtual ~SendConnection() = default;
  FifoSender& fifo() { return fifo_; }
  virtual const TransportTraits& transport() const = 0;
  const char* transportName() const { return transport().name; }
  /// The P2P transport's device slots for this connection (null: host slots only).
  std::unique_ptr<DeviceSlotMemory> deviceSlots;

 protected:
  FifoSender fifo_;
};

/// One direction to one peer, receiving side.
class RecvConnection {
 public:
  virtual ~RecvConnection() = default;
  FifoReceiver& fifo() { return fifo_; }
  virtual const TransportTraits& transport() const = 0;
  const char* transportName() const { return transport().name; }
  /// Called once every sender has connected (after a bootstrap barrier).
  virtual ncclResult_t finish(const TransportContext&) { return ncclSuccess; }
  /// The P2P transport's device slots for this connection (null: host slots only).
  std::unique_ptr<DeviceSlotMemory> deviceSlots;

 protected:
  FifoReceiver fifo_;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const TransportTraits& traits() const = 0;
  const char* name() const { return traits().name; }
  /// Symmetric: both ranks must reach the same answer from the same PeerInfos.
  virtual bool canConnect(const TransportContext& ctx, int peer) const = 0;
  virtual ncclResult_t setupRecv(const TransportContext& ctx, int peer, ConnectBlob* blob,
                                 std::unique_ptr<RecvConnection>* conn) = 0;
  virtual ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                                   std::unique_ptr<SendConnection>* conn) = 0;
  /// True for a transport that adds device slots to the connection of a host-memory transport
  /// (chooseHostTransport skips it).
  bool carriesDeviceSlots() const { return traits().carriesDeviceSlots; }
};

/// Registered transports in priority order.
const std::vector<Transport*>& transportRegistry();
/// The transport to use between ctx.rank and peer (nullptr if none can).
Transport* chooseTransport(const TransportContext& ctx, int peer);
/// The transport whose FIFO carries host memory between ctx.rank and peer: chooseTransport's
/// answer without the transports that only add device slots (nullptr if none can).
Transport* chooseHostTransport(const TransportContext& ctx, int peer);

}  // namespace braid
