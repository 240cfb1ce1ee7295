// Host streams (include/braid/braid.h): an in-order queue of host work with its own thread, so a
// rank can keep computing while its collectives run. A call made with a host stream validates
// its arguments on the caller's thread and queues the rest here.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace braid {

class HostStream {
 public:
  ~HostStream();
  /// Queues `work`, which uses `comms` (kept alive until it has run: destroy drains them).
  void submit(std::vector<ncclComm*> comms, std::function<ncclResult_t()> work);
  /// ncclSuccess (idle), ncclInProgress (work pending) or the sticky error.
  ncclResult_t query();
  /// Waits until idle; returns the sticky error (and sets it as this thread's last error).
  ncclResult_t synchronize();

 private:
  struct Item {
    std::vector<ncclComm*> comms;
    std::function<ncclResult_t()> work;
  };
  void loop();
  std::mutex mutex_;
  std::condition_variable wake_;  ///< the stream thread: work arrived or stop
  std::condition_variable idle_;  ///< waiters: the queue drained
  std::deque<Item> queue_;
  size_t pending_ = 0;  ///< queued + running
  bool stop_ = false;
  ncclResult_t error_ = ncclSuccess;
  std::string errorText_;
  std::thread thread_;
};

/// Registers a new stream; returns its handle.
HostStream* hostStreamCreate();
/// The host stream behind a `cudaStream_t` argument, or nullptr (NULL or a CUDA stream).
HostStream* hostStreamFromHandle(const void* handle);
/// Unregisters, drains and frees; returns the sticky error.
ncclResult_t hostStreamDestroy(HostStream* stream);

/// Blocks until no host stream holds queued work for `comm` (destroy and abort call it).
void commDrainStreamWork(ncclComm* comm);

}  // namespace braid
