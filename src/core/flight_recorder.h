// The communicator's flight recorder: the last N operations (sequence number, what, bytes,
// algorithm, start and end times, state) in a ring, plus the last sequence number heard from each
// peer. Written by the threads running the communicator's operations (the executor's, and the
// caller's for kernel launches: each entry has one writer) at the cost of a few stores and two
// coarse clock reads per operation; read (without stopping the writer) when an
// operation fails or times out, and on SIGUSR1 when BRAID_SIGUSR1_DUMP=1, to say where every rank
// stands.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace braid {

/// kLaunched: a kernel put on its stream, which runs it in order; its end is not timed.
enum class OpState : uint8_t { kQueued, kRunning, kDone, kFailed, kLaunched };

class FlightRecorder {
 public:
  FlightRecorder() = default;
  ~FlightRecorder();
  FlightRecorder(const FlightRecorder&) = delete;
  FlightRecorder& operator=(const FlightRecorder&) = delete;

  /// Sizes the ring (0 disables it) and the per-peer table, and makes the recorder visible to
  /// process-wide dumps (SIGUSR1). Called once, when the communicator is initialised.
  void configure(size_t capacity, int rank, int nranks, uint64_t commHash, const void* comm);

  /// Records a new operation in state `state`; returns its entry (or -1 when disabled).
  /// `what` and `algorithm` must be string literals (or otherwise outlive the recorder).
  int64_t begin(uint64_t seq, const char* what, uint64_t bytes, const char* algorithm,
                OpState state = OpState::kRunning);
  /// Moves entry `id` to `state` (kRunning stamps the start time, kDone/kFailed the end time).
  void setState(int64_t id, OpState state);
  void setAlgorithm(int64_t id, const char* algorithm);

  /// The last collective sequence number seen in data from `peer` (0: nothing yet).
  void notePeerSeq(int peer, uint64_t seq) {
    if (peer >= 0 && peer < nranks_) peerSeq_[peer].store(seq, std::memory_order_relaxed);
  }
  uint64_t peerSeq(int peer) const {
    return peer >= 0 && peer < nranks_ ? peerSeq_[peer].load(std::memory_order_relaxed) : 0;
  }
  /// "rank 0 at #3, rank 2 at #4, rank 3 no data received yet" (at most `limit` peers named).
  std::string peerSummary(int limit = 16) const;

  /// Writes the ring to the log at WARN level, headed by `reason`. `force` writes even when
  /// NCCL_DEBUG is below WARN (an explicit request such as SIGUSR1).
  void dump(const char* reason, bool force = false) const;
  /// Dumps once per communicator: the first failure's report (later ones add nothing).
  void dumpOnFirstFailure(const std::string& error);

  /// Dumps every live communicator's recorder (the SIGUSR1 path).
  static void dumpAll(const char* reason, bool force);

 private:
  struct Entry {
    std::atomic<uint64_t> version{0};  ///< odd while the writer is changing the entry
    std::atomic<uint64_t> id{0};
    std::atomic<uint64_t> seq{0};
    std::atomic<const char*> what{nullptr};
    std::atomic<const char*> algorithm{nullptr};
    std::atomic<uint64_t> bytes{0};
    std::atomic<int64_t> queuedNs{0};
    std::atomic<int64_t> startNs{0};
    std::atomic<int64_t> endNs{0};
    std::atomic<uint8_t> state{0};
  };
  struct Snapshot {
    uint64_t id, seq, bytes;
    const char *what, *algorithm;
    int64_t queuedNs, startNs, endNs;
    OpState state;
  };
  bool read(const Entry& e, Snapshot* out) const;
  Entry* entry(int64_t id) const;

  std::unique_ptr<Entry[]> ring_;
  size_t capacity_ = 0;
  std::atomic<uint64_t> next_{1};  ///< id of the next entry (taken by fetch_add)
  std::unique_ptr<std::atomic<uint64_t>[]> peerSeq_;
  int nranks_ = 0;
  int rank_ = -1;
  uint64_t commHash_ = 0;
  const void* comm_ = nullptr;
  bool registered_ = false;
  std::atomic<bool> failureDumped_{false};
};

/// Installs the SIGUSR1 handler (once per process; BRAID_SIGUSR1_DUMP=1). The handler only
/// write(2)s a byte to a pipe; a background thread reads it and dumps every live communicator.
void installSignalDump();

}  // namespace braid
