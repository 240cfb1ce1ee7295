// Host streams (include/braid/braid.h): an in-order queue of host work with its own thread, so a
// rank can keep computing while its collectives run. A call made with a host stream validates
// its arguments on the caller's thread, and the executor queues its plan here.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/lane.h"
#include "nccl.h"

namespace braid {

class HostStream {
 public:
  /// Queues `work`. Each counter in `holds` counts it until it has run (a communicator's count
  /// of stream work that names it: destroy waits for it to drop to zero).
  void submit(std::vector<std::atomic<int>*> holds, std::function<ncclResult_t()> work);
  /// ncclSuccess (idle), ncclInProgress (work pending) or the sticky error.
  ncclResult_t query();
  /// Waits until idle; returns the sticky error (and sets it as this thread's last error).
  ncclResult_t synchronize();

 private:
  ncclResult_t error();
  std::mutex mutex_;
  ncclResult_t error_ = ncclSuccess;
  std::string errorText_;
  Lane lane_;  ///< the stream's thread and queue; declared last, so it drains first
};

/// Registers a new stream; returns its handle.
HostStream* hostStreamCreate();
/// The host stream behind a `cudaStream_t` argument, or nullptr (NULL or a CUDA stream).
HostStream* hostStreamFromHandle(const void* handle);
/// Unregisters, drains and frees; returns the sticky error.
ncclResult_t hostStreamDestroy(HostStream* stream);

}  // namespace braid
