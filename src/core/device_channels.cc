// The collective kernels' FIFOs of a communicator (device_channels.h).
#include "core/device_channels.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "core/bootstrap.h"
#include "core/team.h"
#include "device/device_runtime.h"
#include "transports/transport.h"
#include "util/log.h"
#include "util/settings.h"
#include "util/status.h"

namespace braid {
namespace {

using kernels::device::DeviceFifo;

constexpr uint64_t kBlobMagic = 0x6b65726e656c6673ull;  // "kernelfs"

/// What each rank publishes about its region.
struct ChannelBlob {
  uint64_t magic;
  uint64_t processHash;
  uint64_t base;  ///< the region's address in its own process
  uint64_t bytes;
  int32_t channels;
  uint32_t slots, simpleSlotBytes, llSlotBytes, ll128SlotBytes;
  int32_t ok;  ///< allocated and filled
  IpcHandle handle;
};

size_t align128(size_t n) {
  return (n + 127) / 128 * 128;
}

/// Where things sit in the region of rank `owner` of `n` (the same formula on every rank).
struct Layout {
  size_t fifo;     ///< bytes per FIFO
  size_t fifos;    ///< bytes of all FIFOs
  size_t scratch;  ///< bytes of scratch per channel
  size_t sent;     ///< offset of the send step counts (DeviceComm::sent)
  size_t tables;   ///< offset of the two pointer tables
  size_t total;
  int n;
  Layout(const DeviceChannelShape& s, int nranks) : n(nranks) {
    fifo = kernels::device::fifoBytes(s.fifo);
    fifos = fifo * static_cast<size_t>(s.channels) * static_cast<size_t>(std::max(n - 1, 0));
    scratch = align128(kernels::device::maxChunkBytes(s.fifo));
    sent = fifos + scratch * static_cast<size_t>(s.channels);
    tables = sent + align128(sizeof(uint64_t) * static_cast<size_t>(s.channels) * n);
    total = tables + 2 * sizeof(DeviceFifo*) * static_cast<size_t>(s.channels) * n;
  }
  /// The FIFO in `owner`'s region that `from` sends into on `channel`.
  size_t inbox(int owner, int from, int channel) const {
    const int index = from < owner ? from : from - 1;
    return (static_cast<size_t>(channel) * (n - 1) + index) * fifo;
  }
};

}  // namespace

DeviceChannelShape DeviceChannelShape::fromEnvironment() {
  DeviceChannelShape s;
  // The ranges are the settings table's (util/settings_table.h): creation refuses a value
  // outside them, and a read elsewhere gets the default. The channel clamps tie the table's
  // upper bound (32) to kMaxChannels, which the table cannot name.
  s.channels = static_cast<int>(std::clamp<int64_t>(settingInt(Setting::kDeviceChannels), 0,
                                                    DeviceChannelShape::kMaxChannels));
  s.fifo.slots = static_cast<uint32_t>(settingInt(Setting::kDeviceSlots));
  const auto bytes = [](Setting setting, int64_t unit) {
    return static_cast<uint32_t>(settingInt(setting) / unit * unit);
  };
  s.fifo.simpleSlotBytes = bytes(Setting::kDeviceSlotBytes, 128);
  // 16-byte multiples, so that every LL chunk of an aligned buffer starts on a 16-byte pack.
  s.fifo.llSlotBytes = bytes(Setting::kDeviceLlBytes, 16);
  // Pairs of 128-byte lines: 240 data bytes, so every LL128 chunk starts on a 16-byte pack too.
  s.fifo.ll128SlotBytes = bytes(Setting::kDeviceLl128Bytes, 256);
  s.p2pLLThreshold = static_cast<size_t>(settingInt(Setting::kNcclP2pLlThreshold));
  s.p2pChannelsPerPeer = static_cast<int>(std::clamp<int64_t>(
      settingInt(Setting::kP2pChannelsPerPeer), 1, DeviceChannelShape::kMaxChannels));
  return s;
}

namespace {

/// The channels of `requested` within `budget` blocks per rank (0: no known limit): all of the
/// budget up to kMaxChannels when none was asked for; fewer than asked, with a warning naming
/// the limit, when the ranks sharing a GPU could not all be resident.
DeviceChannelShape fitChannels(const DeviceChannelShape& requested, int budget, int rank) {
  DeviceChannelShape s = requested;
  if (s.channels == 0)
    s.channels = budget > 0 ? std::min(budget, DeviceChannelShape::kMaxChannels)
                            : DeviceChannelShape::kDefaultChannels;
  if (budget > 0 && s.channels > budget) {
    BRAID_WARN(
        "rank %d: BRAID_DEVICE_CHANNELS=%d, but the GPU keeps only %d blocks of the "
        "collective kernel resident for each rank on it: %d channels",
        rank, s.channels, budget, budget);
    s.channels = budget;
  }
  s.channels = std::max(s.channels, 1);
  s.p2pChannelsPerPeer = std::min(s.p2pChannelsPerPeer, s.channels);
  return s;
}

}  // namespace

ncclResult_t DeviceChannels::agreeBlockBudget(Bootstrap& bootstrap,
                                              const std::vector<PeerInfo>& peers, int rank,
                                              int cudaDevice, int* budget) {
  int resident = 0;
  if (deviceRuntime().residentKernelBlocks(cudaDevice, &resident) != ncclSuccess) resident = 0;
  int sharing = 0;  // ranks whose launches share this rank's GPU (this one included)
  for (const PeerInfo& p : peers)
    sharing += p.hostHash == peers[rank].hostHash && p.deviceId == peers[rank].deviceId;
  const int mine = resident > 0 ? std::max(resident / std::max(sharing, 1), 0) : 0;
  std::vector<std::string> all;
  BRAID_TRY(bootstrap.allGather(std::to_string(mine), &all));
  *budget = 0;
  for (const std::string& a : all) {
    const int b = std::max(std::atoi(a.c_str()), 0);
    if (b > 0) *budget = *budget == 0 ? b : std::min(*budget, b);
  }
  return ncclSuccess;
}

DeviceChannels::~DeviceChannels() {
  freeAll();
}

ncclResult_t DeviceChannels::setup(Bootstrap& bootstrap, const std::vector<PeerInfo>& peers,
                                   int rank, int cudaDevice, const DeviceChannelShape& requested) {
  DeviceRuntime& rt = deviceRuntime();
  runtime_ = &rt;
  rank_ = rank;
  nranks_ = static_cast<int>(peers.size());
  BRAID_TRY(agreeBlockBudget(bootstrap, peers, rank, cudaDevice, &blockBudget_));
  shape_ = fitChannels(requested, blockBudget_, rank);
  const DeviceChannelShape& shape = shape_;
  const Layout layout(shape, nranks_);
  std::string why;
  ChannelBlob mine{};
  mine.magic = kBlobMagic;
  mine.processHash = peers[rank].processHash;
  mine.bytes = layout.total;
  mine.channels = shape.channels;
  mine.slots = shape.fifo.slots;
  mine.simpleSlotBytes = shape.fifo.simpleSlotBytes;
  mine.llSlotBytes = shape.fifo.llSlotBytes;
  mine.ll128SlotBytes = shape.fifo.ll128SlotBytes;
  // The abort and status words, then the channels' mismatch reports (8-byte aligned).
  const size_t wordBytes = (sizeof(int) * (1 + shape.channels) + 7) / 8 * 8;
  words_ = static_cast<int*>(rt.allocMapped(
      wordBytes + sizeof(uint64_t) * kernels::device::kReportWords * shape.channels));
  reports_ =
      words_ ? reinterpret_cast<uint64_t*>(reinterpret_cast<char*>(words_) + wordBytes) : nullptr;
  void* region = nullptr;
  int sharer = -1;    // a rank of another process on this rank's GPU
  int inProcess = 0;  // this process's ranks on this rank's GPU, each launching on its stream
  for (const PeerInfo& p : peers) {
    if (p.processHash != mine.processHash && p.deviceId == peers[rank].deviceId) sharer = p.rank;
    inProcess += p.processHash == mine.processHash && p.deviceId == peers[rank].deviceId;
  }
  const int queues = rt.hardwareQueues(cudaDevice);
  if (queues > 0 && inProcess > queues) {
    why = std::to_string(inProcess) + " ranks of this process launch kernels on GPU " +
          std::to_string(cudaDevice) + ", more than its " + std::to_string(queues) +
          " hardware queues (CUDA_DEVICE_MAX_CONNECTIONS; CUDA's default 8, at most 32): two "
          "ranks' streams would share a queue, where one rank's kernel waits behind another's "
          "that waits for it. Set CUDA_DEVICE_MAX_CONNECTIONS=" +
          std::to_string(std::min(inProcess, 32)) +
          " before CUDA starts (up to 32 ranks), or run fewer ranks per process";
  } else if (sharer >= 0 && !rt.mpsEnabled(cudaDevice)) {
    why = "rank " + std::to_string(sharer) + " is another process on the same GPU (device " +
          std::to_string(cudaDevice) +
          ") and MPS is not running: the processes' kernels would take turns on the GPU, and "
          "kernels that wait for each other would crawl from one time slice to the next. Start "
          "MPS (nvidia-cuda-mps-control -d) for collective kernels";
  } else if (!words_) {
    why = "no mapped host memory for the abort and status words";
  } else if (rt.allocDevice(cudaDevice, layout.total, &region) != ncclSuccess) {
    why = lastError();
  } else {
    region_ = static_cast<char*>(region);
    // Zeroed slots (no LL flag may match before it is written), each FIFO's header.
    std::vector<char> image(layout.tables, 0);
    for (int c = 0; c < shape.channels; c++)
      for (int p = 0; p < nranks_; p++)
        if (p != rank) {
          const DeviceFifo header = kernels::device::fifoHeader(shape.fifo);
          memcpy(image.data() + layout.inbox(rank, p, c), &header, sizeof(header));
        }
    for (const PeerInfo& p : peers) crossProcess_ |= p.processHash != mine.processHash;
    oneRankPerProcess_ = oneRankPerProcess(peers);
    if (rt.upload(cudaDevice, region_, image.data(), image.size()) != ncclSuccess ||
        (crossProcess_ && rt.exportMemory(region_, &mine.handle) != ncclSuccess))
      why = lastError();
    mine.base = reinterpret_cast<uint64_t>(region_);
  }
  mine.ok = why.empty();
  std::vector<std::string> all;
  BRAID_TRY(
      bootstrap.allGather(std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)), &all));
  // Map the peers' regions and fill the tables.
  std::vector<DeviceFifo*> tables(2 * static_cast<size_t>(shape.channels) * nranks_, nullptr);
  for (int p = 0; p < nranks_ && why.empty(); p++) {
    ChannelBlob b{};
    if (all[p].size() == sizeof(b)) memcpy(&b, all[p].data(), sizeof(b));
    if (b.magic != kBlobMagic || b.channels != shape.channels || b.slots != shape.fifo.slots ||
        b.simpleSlotBytes != shape.fifo.simpleSlotBytes ||
        b.llSlotBytes != shape.fifo.llSlotBytes || b.ll128SlotBytes != shape.fifo.ll128SlotBytes) {
      why = "rank " + std::to_string(p) +
            " sizes its kernel FIFOs differently (BRAID_DEVICE_CHANNELS, BRAID_DEVICE_SLOTS, "
            "BRAID_DEVICE_SLOT_BYTES, BRAID_DEVICE_LL_BYTES and BRAID_DEVICE_LL128_BYTES must be "
            "alike on every rank)";
      break;
    }
    if (!b.ok) {
      why = "rank " + std::to_string(p) + " could not set up its kernel FIFOs";
      break;
    }
    if (p == rank) continue;
    char* base = reinterpret_cast<char*>(b.base);
    if (b.processHash == mine.processHash) {
      if (rt.enablePeerAccess(cudaDevice, peers[p].cudaDevice) != ncclSuccess) {
        why = lastError();
        break;
      }
    } else {
      void* opened = nullptr;
      if (rt.openMemory(cudaDevice, b.handle, &opened) != ncclSuccess) {
        why = "mapping rank " + std::to_string(p) + "'s kernel FIFOs: " + lastError();
        break;
      }
      mapped_.push_back(opened);
      base = static_cast<char*>(opened);
    }
    for (int c = 0; c < shape.channels; c++) {
      const size_t at = static_cast<size_t>(c) * nranks_ + p;
      tables[at] = reinterpret_cast<DeviceFifo*>(region_ + layout.inbox(rank, p, c));
      tables[tables.size() / 2 + at] =
          reinterpret_cast<DeviceFifo*>(base + layout.inbox(p, rank, c));
    }
  }
  if (why.empty() && rt.upload(cudaDevice, region_ + layout.tables, tables.data(),
                               tables.size() * sizeof(DeviceFifo*)) != ncclSuccess)
    why = lastError();
  // Every rank learns whether all could: the kernels run on all ranks or on none.
  std::vector<std::string> oks;
  BRAID_TRY(bootstrap.allGather(why.empty() ? "1" : "0", &oks));
  int failed = -1;
  for (int p = 0; p < nranks_ && failed < 0; p++)
    if (oks[p] != "1") failed = p;
  if (failed >= 0) {
    if (why.empty()) why = "rank " + std::to_string(failed) + " could not set up";
    BRAID_WARN("rank %d: device buffers move by host-driven steps, not collective kernels: %s",
               rank, why.c_str());
    freeAll();
    return ncclSuccess;
  }
  scratchPerChannel_ = layout.scratch;
  scratch_ = region_ + layout.fifos;
  sent_ = reinterpret_cast<uint64_t*>(region_ + layout.sent);
  inboxTable_ = reinterpret_cast<DeviceFifo**>(region_ + layout.tables);
  outboxTable_ = inboxTable_ + static_cast<size_t>(shape.channels) * nranks_;
  ready_ = true;
  BRAID_INFO(kSubsysInit,
             "rank %d: collective kernels ready: %d channels, %u slots of %u B "
             "(LL %u B, LL128 %u B), %zu B of device memory",
             rank, shape.channels, shape.fifo.slots, shape.fifo.simpleSlotBytes,
             shape.fifo.llSlotBytes, shape.fifo.ll128SlotBytes, layout.total);
  return ncclSuccess;
}

kernels::device::DeviceComm DeviceChannels::comm(int channels) const {
  kernels::device::DeviceComm c;
  c.rank = rank_;
  c.nranks = nranks_;
  c.channels = std::clamp(channels, 1, shape_.channels);
  c.inbox = inboxTable_;
  c.outbox = outboxTable_;
  c.scratch = scratch_;
  c.sent = sent_;
  c.scratchBytesPerChannel = scratchPerChannel_;
  c.abort = words_;
  c.report = reports_;
  return c;
}

int DeviceChannels::takeFailure(int* channel) {
  if (!words_) return 0;
  for (int c = 0; c < shape_.channels; c++) {
    std::atomic_ref<int> word(words_[1 + c]);
    if (const int s = word.load(std::memory_order_acquire); s != kernels::device::kChannelOk) {
      word.store(kernels::device::kChannelOk, std::memory_order_relaxed);
      if (channel) *channel = c;
      return s;
    }
  }
  return 0;
}

void DeviceChannels::raiseAbort() {
  if (words_) std::atomic_ref<int>(words_[0]).store(1, std::memory_order_relaxed);
}

void DeviceChannels::release(Bootstrap* bootstrap, bool abort) {
  if (ready_) {
    if (abort) raiseAbort();
    // This rank's launches first: once they are done no peer writes into its FIFOs again
    // (fifo.h), so ranks of this process, which use plain pointers, need not wait for each other
    // (a program may destroy its ranks' communicators one after another from one thread).
    if (runtime_->waitChain(chain_) != ncclSuccess) abort = true;
    for (void* p : mapped_) runtime_->closeMemory(p);
    mapped_.clear();
    // Peers in other processes map this rank's region through CUDA IPC: it is freed only once
    // every one of them has unmapped it. After an abort nothing is awaited from the peers.
    if (crossProcess_ && oneRankPerProcess_ && !abort && bootstrap &&
        bootstrap->barrier() != ncclSuccess)
      BRAID_WARN("rank %d: freeing the kernel FIFOs without the peers' barrier: %s", rank_,
                 lastError().c_str());
  }
  freeAll();
}

void DeviceChannels::freeAll() {
  if (!runtime_) return;
  for (void* p : mapped_) runtime_->closeMemory(p);
  mapped_.clear();
  if (region_) runtime_->freeDevice(region_);
  region_ = nullptr;
  if (words_) runtime_->freeMapped(words_);
  words_ = nullptr;
  reports_ = nullptr;
  runtime_->destroyChain(chain_);
  chain_ = nullptr;
  ready_ = false;
}

}  // namespace braid
