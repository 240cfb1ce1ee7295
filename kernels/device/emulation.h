// The device protocol on CPU threads: every block of every rank of a launch is a thread of this
// process, running the very code nvcc compiles for the GPU (kernels/device/collective.h), over
// FIFOs in ordinary memory. CI proves the protocol here (ctest label `emulation`, and under
// ThreadSanitizer) on machines without a GPU.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device/fifo.h"
#include "kernels/device/p2p.h"

namespace braid::kernels::device {

/// Runs every channel of one rank's launch on a thread of its own (block `c` is channel
/// c) and returns when all have ended, as a kernel of that rank would: the blocks of the other
/// ranks run elsewhere (their own launches) and meet these through the FIFOs. `status` receives
/// each channel's ChannelStatus. Returns kChannelOk, or the first other status.
int runLaunchOnThreads(const LaunchArgs& launch, int* status);
/// The same for a point-to-point launch: launch.blocks() threads; a block that did not end well
/// writes its status to status[block % statusWords]. Returns kChannelOk or the first other.
int runP2pOnThreads(const P2pLaunchArgs& launch, int* status, int statusWords);

/// n ranks' FIFOs (every ordered pair, every channel), their scratch, and the abort word.
class EmulatedWorld {
 public:
  EmulatedWorld(int nranks, int channels, FifoShape shape = {});
  ~EmulatedWorld();
  EmulatedWorld(const EmulatedWorld&) = delete;
  EmulatedWorld& operator=(const EmulatedWorld&) = delete;

  int nranks() const { return nranks_; }
  int channels() const { return channels_; }
  /// Rank r's view, for CollectiveArgs::comm.
  DeviceComm comm(int rank) const;

  /// Runs args[r] on rank r, every channel a thread, and waits for all of them. Past
  /// `deadline` the abort word is raised and the blocks give up. Returns "" when every channel
  /// of every rank ended normally, else what went wrong (bad arguments, channels that aborted).
  std::string launch(const std::vector<CollectiveArgs>& args,
                     std::chrono::milliseconds deadline = std::chrono::seconds(60));

  /// Runs launches[r] on rank r (a point-to-point launch each), as launch() does.
  std::string launchP2p(const std::vector<P2pLaunchArgs>& launches,
                        std::chrono::milliseconds deadline = std::chrono::seconds(60));

  /// The FIFO from `from` to `to` on `channel` (for tests that look at the counters).
  const DeviceFifo& fifo(int from, int to, int channel) const;
  /// The chunks `from` has sent to `to` on `channel` (the sender's own step count).
  std::uint64_t sent(int from, int to, int channel) const;

 private:
  struct Memory;
  int nranks_, channels_;
  FifoShape shape_;
  std::unique_ptr<Memory> memory_;
};

}  // namespace braid::kernels::device
