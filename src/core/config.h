// Per-communicator settings: environment variables read at communicator creation, overridden by
// ncclConfig_t fields where NCCL defines them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nccl.h"

namespace braid {

/// Under BRAID_CONNECT=auto, communicators of up to this many ranks connect every pair at init:
/// few enough connections to make at once, and the one-shot algorithms need them
/// (BRAID_CONNECT_ALL_MAX_RANKS changes it).
constexpr int kEagerConnectRanks = 32;

struct CommConfig {
  double timeoutS = 300;          ///< BRAID_TIMEOUT_S: every wait ends with an error after this
  int spinIters = -1;             ///< BRAID_SPIN: polls before sleeping (-1: decide from cores)
  uint32_t nslots = 8;            ///< BRAID_NSLOTS: FIFO depth per connection
  size_t slotBytes = 512 * 1024;  ///< BRAID_SLOT_BYTES: FIFO slot size
  /// BRAID_ZERO_COPY_MIN_BYTES: smallest allreduce that tries registered buffers in place
  size_t zeroCopyMinBytes = 1 << 20;
  /// BRAID_ZERO_COPY_SHARED=0: the zero-copy allreduce runs its static schedule (one block per
  /// rank, two barriers) instead of sharing chunks out; rank 0's setting decides for all
  bool zeroCopyShared = true;
  int tcpSockets = 2;                   ///< BRAID_TCP_SOCKETS (NCCL_NSOCKS_PERTHREAD also honoured)
  int tcpBufferBytes = 4 << 20;         ///< BRAID_TCP_BUFFER: SO_SNDBUF/SO_RCVBUF
  size_t tcpInlineBytes = 512 << 10;    ///< BRAID_TCP_INLINE_BYTES: sent by the posting thread
  std::string algo;                     ///< NCCL_ALGO
  std::string proto;                    ///< NCCL_PROTO (Simple; LL is the LowLatency allreduce)
  std::vector<std::string> transports;  ///< allowed transports, empty = all
  /// NCCL_NET or ncclConfig_t.netName (the config wins): the network across hosts by name, a
  /// plugin's or "Socket" (Braid's own TCP); empty: the first plugin that loads, else Socket
  std::string netName;
  /// BRAID_CONNECT: all (every pair at init), neighbours (ring, tree and hierarchical peers
  /// only) or auto (all up to kEagerConnectRanks ranks; beyond, neighbours at init and any other
  /// pair when a send or receive first needs it)
  enum class Connect { kAuto, kAll, kNeighbours } connect = Connect::kAuto;
  /// BRAID_CONNECT_ALL_MAX_RANKS: under auto, the most ranks that still connect every pair at init
  int connectAllMaxRanks = kEagerConnectRanks;
  /// Init connects only the neighbours (set by commInit from `connect` and the rank count).
  bool connectNeighboursOnly = false;
  /// A send or receive may connect a pair init did not (auto beyond connectAllMaxRanks).
  bool connectOnFirstUse = false;
  /// BRAID_RING_ORDER=host (default): rings visit each host's ranks one after another;
  /// rank: rings follow rank numbers
  bool ringByHost = true;
  /// BRAID_RINGS (1 or 2, default 2): rings the ring allreduce, reduce-scatter, allgather,
  /// broadcast and reduce run side by side across hosts
  /// (Team::secondRingOrder); 1 keeps one ring, whose hops between hosts leave from one rank of
  /// each host
  int rings = 2;
  int blocking = 1;                ///< ncclConfig_t.blocking
  std::string commName;            ///< ncclConfig_t.commName
  size_t flightRecorderSize = 64;  ///< BRAID_FLIGHT_RECORDER_SIZE: operations kept (0: off)
  bool sigusr1Dump = false;        ///< BRAID_SIGUSR1_DUMP=1: SIGUSR1 dumps every flight recorder
  /// BRAID_TUNER_ADAPT: calls per epoch of the adaptive choice (tuner/adaptive.h); 0: off
  uint32_t adaptCalls = 2048;
};

/// Reads the environment and validates/applies `config` (which may be null).
ncclResult_t loadConfig(const ncclConfig_t* config, CommConfig* out);

/// A copy of a caller's ncclConfig_t (and the name it points to) for work that runs after the
/// call has returned.
struct OwnedConfig {
  ncclConfig_t config;
  std::string commName;
  std::string netName;
  bool present = false;
  const ncclConfig_t* get() const { return present ? &config : nullptr; }
};
std::shared_ptr<OwnedConfig> ownConfig(const ncclConfig_t* config);

}  // namespace braid
