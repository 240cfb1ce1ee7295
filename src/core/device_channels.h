// The collective kernels' FIFOs of one communicator (kernels/device/fifo.h), set up at init when
// every pair of ranks reaches the other's GPU memory (Team::overP2p), and released behind a
// barrier.
//
// Each rank allocates one region of its device's memory: for every channel and every peer, the
// FIFO that peer sends into (its inbox), then each channel's scratch, then the two pointer
// tables a launch reads (inbox[channel * n + peer] and outbox[...], the latter pointing into the
// peers' regions). Ranks of one process use each other's pointers; ranks of other processes map
// the region through an IPC handle. The layout is the same formula on every rank, so a rank finds
// its FIFO in a peer's region from the peer's base address alone.
//
// When any rank cannot set up or map (no memory, an IPC open refused), every rank learns it from
// a second all-gather and the communicator goes on without the kernels: device buffers then move
// through the P2P transport's host-driven steps, as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/device/fifo.h"
#include "nccl.h"

namespace braid {

class Bootstrap;
class DeviceRuntime;
struct PeerInfo;

/// Sizes of the kernels' FIFOs (BRAID_DEVICE_CHANNELS, BRAID_DEVICE_SLOTS,
/// BRAID_DEVICE_SLOT_BYTES, BRAID_DEVICE_LL_BYTES, BRAID_DEVICE_LL128_BYTES); they must be alike
/// on every rank.
struct DeviceChannelShape {
  /// Channels (blocks) of a launch; 0: as many as the GPU keeps resident for every rank on it,
  /// at most kMaxChannels (kDefaultChannels where the runtime knows no limit).
  int channels = 0;
  static constexpr int kMaxChannels = 32;
  static constexpr int kDefaultChannels = 8;
  kernels::device::FifoShape fifo{4, 128 << 10, 8 << 10, 64 << 10};
  /// Point-to-point (kernels/device/p2p.h): a transfer of at most this many bytes goes under LL
  /// (NCCL_P2P_LL_THRESHOLD, as NCCL's), and each peer's transfers use this many channels in
  /// each direction (BRAID_P2P_CHANNELS_PER_PEER).
  size_t p2pLLThreshold = 16384;
  int p2pChannelsPerPeer = 2;
  static DeviceChannelShape fromEnvironment();
};

class DeviceChannels {
 public:
  DeviceChannels() = default;
  ~DeviceChannels();
  DeviceChannels(const DeviceChannels&) = delete;
  DeviceChannels& operator=(const DeviceChannels&) = delete;

  /// Collective over the communicator's ranks (through `bootstrap`): allocates, exchanges and
  /// maps. Errors of the exchange itself fail init; a rank that cannot set up leaves every
  /// rank without kernels (ready() false), with the reason logged.
  ncclResult_t setup(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers, int rank,
                     int cudaDevice, const DeviceChannelShape& shape);
  bool ready() const { return ready_; }
  int channels() const { return shape_.channels; }
  /// Blocks one rank's launch may run so that the launches of all ranks sharing a GPU are
  /// resident at once (a resident block may wait for one that is not): that GPU's resident
  /// kernel blocks over its ranks, the fewest of any rank. The channels are at most this.
  int blockBudget() const { return blockBudget_; }
  const DeviceChannelShape& shape() const { return shape_; }

  /// This rank's view for a launch of `channels` (<= channels()) channels.
  kernels::device::DeviceComm comm(int channels) const;
  /// Where the launch's blocks report (mapped memory, channels() words).
  int* status() const { return words_ + 1; }
  /// The first channel status other than ok since the last call (0 if none), cleared; its
  /// channel in `*channel` when given.
  int takeFailure(int* channel = nullptr);
  /// What channel `channel` saw when it reported kChannelMismatch (kernels/device/fifo.h:
  /// DeviceComm::report, kReportWords words).
  const uint64_t* report(int channel) const {
    return reports_ + channel * kernels::device::kReportWords;
  }
  /// Makes every block of every launch of this communicator give up waiting.
  void raiseAbort();
  /// A communicator's launches run in issue order: chained on this event.
  void** chain() { return &chain_; }

  /// Waits for this rank's launches, unmaps the peers' regions, and frees this rank's: behind a
  /// barrier when peers of other processes map it and every process holds one rank (unless
  /// `abort`), at once otherwise (a process holding several ranks may destroy them one after
  /// another from one thread, and a barrier would wait for the ones not yet destroyed).
  void release(Bootstrap* bootstrap, bool abort);

 private:
  void freeAll();

  DeviceRuntime* runtime_ = nullptr;
  DeviceChannelShape shape_;
  int rank_ = 0, nranks_ = 1;
  /// blockBudget(): the fewest of resident blocks over the ranks on a GPU, of any rank (0: no
  /// rank's runtime knows a limit), agreed through the bootstrap.
  static ncclResult_t agreeBlockBudget(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers,
                                       int rank, int cudaDevice, int* budget);

  bool ready_ = false;
  int blockBudget_ = 0;
  bool crossProcess_ = false;       ///< some peer maps the region through an IPC handle
  bool oneRankPerProcess_ = false;  ///< every process holds one rank (all ranks agree)
  char* region_ = nullptr;          ///< this rank's device memory
  std::vector<void*> mapped_;       ///< peers' regions opened through IPC
  int* words_ = nullptr;            ///< mapped: [0] abort, [1 + c] channel c's status
  uint64_t* reports_ = nullptr;     ///< mapped, after the words: kReportWords per channel
  void* chain_ = nullptr;           ///< the runtime's event of the last launch
  size_t scratchPerChannel_ = 0;
  char* scratch_ = nullptr;                              ///< in region_
  uint64_t* sent_ = nullptr;                             ///< in region_
  kernels::device::DeviceFifo** inboxTable_ = nullptr;   ///< in region_
  kernels::device::DeviceFifo** outboxTable_ = nullptr;  ///< in region_
};

}  // namespace braid
