// Non-blocking communicators (ncclConfig_t.blocking = 0): init, collectives, split, shrink and
// finalize return ncclInProgress and run, in call order, on the communicator's worker thread;
// ncclCommGetAsyncError reports ncclInProgress until that queue is empty, then ncclSuccess or the
// first error.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "nccl.h"

struct ncclComm;

namespace braid {

/// Background work a non-blocking communicator has queued and not yet finished.
struct AsyncWork {
  std::mutex mutex;
  std::condition_variable idle;  ///< signalled when `pending` drops to 0
  size_t pending = 0;
};

/// A copy of a caller's ncclConfig_t (and the name it points to) for work that runs after the
/// call has returned.
struct OwnedConfig {
  ncclConfig_t config;
  std::string commName;
  bool present = false;
  const ncclConfig_t* get() const { return present ? &config : nullptr; }
};
std::shared_ptr<OwnedConfig> ownConfig(const ncclConfig_t* config);

/// True for a communicator created with config.blocking = 0 (or inheriting it).
bool commIsNonblocking(const ncclComm* comm);
/// Queues `task` on the communicator's worker and returns ncclInProgress; a failure of the task
/// becomes the communicator's asynchronous error.
ncclResult_t asyncSubmit(ncclComm* comm, std::function<ncclResult_t()> task);
/// Waits until every queued task of `comm` has run.
void asyncDrain(ncclComm* comm);

}  // namespace braid
