// Online choice among the cost model's near candidates, for allreduce between ranks that share
// memory (docs/performance.md, "Adaptive choice"). The model's estimates are fixed at init, but
// on a virtual machine the cost of handing a slot from one core to another drifts over seconds
// (by 3-10x on the reference VM), and the fastest of two algorithms the model sees within 2x of
// each other flips with it. So per message size, each epoch of calls (BRAID_TUNER_ADAPT, 2048)
// starts with a few calls of every near candidate in turn, timed; one small allreduce then sums
// every rank's mean call of each, and the candidate with the least total runs for the rest of
// the epoch.
//
// Every rank runs the same collectives in the same order, so every rank's table walks through the
// same states and runs the same algorithm at every call; the agreement's sums are bitwise the same
// on every rank, so the winner is too. A disagreement would be caught as any other: the slots
// carry the algorithm in their fingerprint (algorithms/fingerprint.h). The tuner (tuner.h) owns
// one per communicator and gives it the candidates and the agreement's allreduce.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid {

class Algorithm;

/// At most this many candidates take turns (the cheapest estimates first).
constexpr int kAdaptMaxCandidates = 4;
/// A candidate's estimate is at most this many times the best one's. Wide, because the model's
/// error is what adaptation corrects: at 2 pinned ranks the ring, 1.9x Direct's estimate at
/// 16 KiB, runs 1.4x faster than Direct in the VM's faster spells.
constexpr double kAdaptSpread = 2.5;
/// Calls of each candidate at the start of an epoch: untimed, then timed.
constexpr uint32_t kAdaptWarmCalls = 4;
constexpr uint32_t kAdaptExploreCalls = 12;

class AdaptiveChoice {
 public:
  /// One message size's state.
  struct Entry {
    size_t bytes = 0;
    bool valid = false;
    int candidates = 0;
    std::array<const Algorithm*, kAdaptMaxCandidates> candidate{};
    int winner = 0;
    bool warm = false;  ///< every candidate has run once through the exploration
    uint32_t call = 0;  ///< position in the epoch
    int timing = -1;    ///< the candidate the current call runs while exploring, else -1
    /// This rank's time in the timed calls of each candidate in this exploration, and their count.
    std::array<double, kAdaptMaxCandidates> spentUs{};
    std::array<uint32_t, kAdaptMaxCandidates> timed{};
  };

  /// What select() asks of its owner: a new size's candidates, and the agreement (an allreduce
  /// sum of `n` doubles in place over the communicator's ranks).
  class Host {
   public:
    virtual int nearCandidates(const Algorithm** out, int max) = 0;
    virtual ncclResult_t agree(double* totals, int n) = 0;

   protected:
    ~Host() = default;
  };

  /// Calls per epoch (0: never adapt).
  void configure(uint32_t epochCalls) { epoch_ = epochCalls; }
  /// The algorithm a call of `bytes` runs instead of the model's choice, or nullptr (a single
  /// candidate, or adaptation off). At the end of an epoch's exploration it first runs the
  /// agreement; an error from it is returned. `*entry` gets the state to pass to record().
  ncclResult_t select(size_t bytes, Host& host, const Algorithm** algorithm, Entry** entry);
  /// The time the call took, while its entry explores.
  static void record(Entry* entry, double us);

 private:
  ncclResult_t agree(Host& host, Entry& e);

  uint32_t epoch_ = 0;
  std::array<Entry, 16> entries_{};
};

}  // namespace braid
