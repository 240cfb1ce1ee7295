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

namespace braid::kernels::device {

struct FifoShape {
  std::uint32_t slots = 4;
  std::uint32_t simpleSlotBytes = 4096;
  std::uint32_t llSlotBytes = 1024;
};

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

  /// The FIFO from `from` to `to` on `channel` (for tests that look at the counters).
  const DeviceFifo& fifo(int from, int to, int channel) const;

 private:
  struct Memory;
  int nranks_, channels_;
  FifoShape shape_;
  std::unique_ptr<Memory> memory_;
};

}  // namespace braid::kernels::device
