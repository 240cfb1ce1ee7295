// Whether a communicator can still be used, and why not: the abort flag every wait checks, the
// first failure (kept, with its text, for ncclCommGetAsyncError and for later calls), revocation,
// and the calls in progress that abort and revoke wait for. After a failure only abort, destroy
// and shrink remain valid, as in NCCL.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "nccl.h"

namespace braid {

class Health {
 public:
  /// Non-zero: every wait on the communicator gives up now (ncclCommAbort, revoke).
  std::atomic<uint32_t> abortFlag{0};
  /// ncclCommRevoke (or a shrink with NCCL_SHRINK_ABORT) ran.
  std::atomic<uint32_t> revoked{0};
  /// API calls in progress (abort and revoke wait for them to leave).
  std::atomic<int> activeCalls{0};
  /// Init completed.
  bool initialized = false;

  /// Records a failure that makes the communicator unusable; the first one is kept.
  void setError(ncclResult_t code, const std::string& text);
  /// ncclSuccess, ncclInProgress (non-blocking work queued) or the kept failure.
  ncclResult_t state() const { return static_cast<ncclResult_t>(error_.load()); }
  /// The kept failure's text.
  std::string errorText() const;
  /// Counts work queued for later (a non-blocking communicator's): the state reads
  /// ncclInProgress until as much work is done, unless a failure is kept.
  void workQueued();
  void workDone();
  /// Forgets the kept failure (a revoked communicator reads ncclSuccess, as in NCCL).
  void clearError();
  /// Sets the abort flag and waits (up to 10 s) until the calls in progress have left.
  void abortCalls();

 private:
  mutable std::mutex mutex_;
  std::atomic<int> error_{ncclSuccess};
  std::string text_;
  size_t queued_ = 0;
};

/// Keeps a communicator's calls counted while one runs (Health::abortCalls waits for them).
class ActiveCall {
 public:
  explicit ActiveCall(Health& h) : health_(h) { health_.activeCalls.fetch_add(1); }
  ~ActiveCall() { health_.activeCalls.fetch_sub(1); }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  Health& health_;
};

}  // namespace braid
