// Barrier and small reductions over every rank of the run, for the test's own bookkeeping
// (times, error counts, the device report), never for the measured collectives.
//
// Threads of one process combine first (mutex + condition variable). Processes then combine
// through MPI under mpirun (the last thread to arrive calls it), or under braidrun through a
// Braid ncclAllReduce that every thread issues on its own communicators: braidrun gives no other
// channel between the processes, and the communicator under test is already connected.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "combine.h"
#include "launch_env.h"
#include "nccl.h"

namespace braid::bench {

/// The communicators one thread drives, and the global rank of the first.
struct ThreadComms {
  int thread = 0;
  const ncclComm_t* comms = nullptr;
  int count = 0;
  int firstRank = 0;
};

class RankGroup {
 public:
  RankGroup(const LaunchInfo& launch, int nThreads);

  /// Returns when every thread of every process has called it.
  void barrier(const ThreadComms& self);

  /// Combines values element-wise over all threads of all processes; every caller gets the
  /// result. kAvg averages over threads (each thread's value stands for its ranks), kRank0
  /// returns global rank 0's values.
  void allreduce(const ThreadComms& self, double* values, std::size_t count, Combine how);
  void allreduce(const ThreadComms& self, std::int64_t* values, std::size_t count, Combine how);

  /// Concatenates every process's text (passed by its thread 0, up to kMaxProcessText bytes)
  /// in process order. The result is complete on process 0.
  std::string gatherText(const ThreadComms& self, const std::string& processText);

  static constexpr std::size_t kMaxProcessText = 8192;

 private:
  template <typename T>
  struct Slot {
    std::vector<T> values;
    int arrived = 0;
    std::uint64_t generation = 0;
  };

  template <typename T>
  void combine(const ThreadComms& self, T* values, std::size_t count, Combine how,
               bool crossProcess);
  template <typename T>
  void combineAcrossProcesses(const ThreadComms& self, T* values, std::size_t count, Combine how);
  template <typename T>
  Slot<T>* slots();

  LaunchInfo launch_;
  int nThreads_;
  std::mutex mutex_;
  std::condition_variable arrivedAll_;
  std::vector<int> epochs_;  // per thread: which of the two slots its next call uses
  Slot<double> doubleSlots_[2];
  Slot<std::int64_t> intSlots_[2];
};

}  // namespace braid::bench
