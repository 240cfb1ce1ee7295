// The tuner: which algorithm runs a call. NCCL_ALGO and NCCL_PROTO filter the registered
// algorithms (algo_filter.h); Self and the always-preferred ones come first where they apply;
// the cost model (cost_model.h) ranks the rest; for allreduce between ranks that share memory
// with a core each, the adaptive choice (adaptive.h) may run a near candidate instead. The
// model's inputs are the same on every rank (comm init passes rank 0's constants), so every rank
// makes the same choice. One Tuner per communicator, with one cache: a size's ranking, choice
// and fallback are worked out once and looked up after that. The collective kernels' schedule
// and protocol come from the same tuner (chooseDevice), with the model's device constants.
//
// The cores a communicator has at init are not the cores it has later: a training step keeps
// every core busy, and launchers pin nothing. Every kContentionCalls collectives the ranks agree
// (an allreduce of each rank's figure) on how contended their cores are now, from their waits:
// the share of waits that spinning did not end (util/wait.h). While most did not, the model
// ranks with the shared-cores constants, the adaptive choice rests, whose timings the scheduler
// would decide, and waits spin briefly (kContendedSpinPolls).
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/config.h"
#include "tuner/adaptive.h"
#include "tuner/cost_model.h"
#include "tuner/device_schedule.h"

namespace braid {

/// Collectives between the ranks' agreements on how contended their cores are.
constexpr uint64_t kContentionCalls = 256;
/// The share of a rank's waits that spinning did not end above which its cores count as
/// contended, and below which they count as free again (apart, so the mode does not flap).
constexpr double kContendedAbove = 0.5;
constexpr double kFreeBelow = 0.2;
/// The most a wait spins while the cores are contended (about seven microseconds): on a host with
/// no core to spare, a spin that pays still takes its time from the rank's own computation.
constexpr int kContendedSpinPolls = 256;

/// Runs a collective of the tuner's own (the adaptive choice's agreement) on the communicator
/// whose call is being chosen, before that call; the executor provides it.
class InternalRunner {
 public:
  virtual ncclResult_t runInternal(CollArgs& args) = 0;

 protected:
  ~InternalRunner() = default;
};

/// The tuner's answer for one call.
struct Choice {
  const Algorithm* algorithm = nullptr;
  /// The next usable algorithm in the model's order: what an algorithm that finds at run time
  /// that it cannot take the call hands it to (Context::fallback).
  const Algorithm* fallback = nullptr;
  /// Set while the adaptive choice times this call: pass the call's time to Tuner::record.
  AdaptiveChoice::Entry* timed = nullptr;
};

class Tuner {
 public:
  /// The communicator's model and filters (comm init); forgets everything cached.
  void configure(const CommCostModel& model, const CommConfig& config, int nranks);
  const CommCostModel& model() const { return model_; }

  /// The algorithm for `args` on `ctx`, or an error naming the filters when they leave none.
  /// May first run the adaptive choice's agreement through `runner`.
  ncclResult_t choose(const Context& ctx, const CollArgs& args, InternalRunner& runner,
                      Choice* out);
  /// The time a call chosen with `choice` took (only timed calls are kept).
  static void record(const Choice& choice, double us) {
    if (choice.timed) AdaptiveChoice::record(choice.timed, us);
  }
  /// The model's estimate of `args` with the algorithm choose() would pick first, in
  /// microseconds (0 when none is usable): ncclGroupSimulateEnd's answer.
  double estimateUs(const Context& ctx, const CollArgs& args);
  /// The collective kernels' schedule for `coll` of `bytes` (tuner/device_schedule.h) on at
  /// most `maxChannels`: the same model's device constants (rank 0's), NCCL_ALGO and NCCL_PROTO.
  DeviceSchedule chooseDevice(CollType coll, size_t bytes, int maxChannels) const {
    return chooseDeviceSchedule(coll, bytes, nranks_, maxChannels, algo_, proto_, model_.device);
  }
  /// The model's estimate of a batch of `transfers` point-to-point transfers of `bytes` in all.
  double estimateP2pUs(size_t transfers, size_t bytes) const;
  /// The algorithm of the last collective chosen (braidCommGetLastAlgorithm); null before one.
  const char* lastAlgorithm() const { return last_.load(std::memory_order_relaxed); }
  /// Whether the ranks last agreed that their cores are contended.
  bool contended() const { return contended_; }

 private:
  /// A size's worked-out answer: the usable algorithms in the model's order (preferred ones
  /// first), with their estimates.
  struct Ranked {
    bool valid = false;
    CollType coll = CollType::kAllReduce;
    size_t bytes = 0;
    bool device = false;
    bool contended = false;
    std::vector<const Algorithm*> usable;
    std::vector<double> us;
    bool preferred = false;  ///< usable[0] is always-preferred (no adaptation, no near list)
  };
  class Adaptation;

  Ranked& rank(const Context& ctx, const CollArgs& args);
  bool adapts(const CollArgs& args) const;
  ncclResult_t noneLeft(const CollArgs& args) const;
  ncclResult_t chooseForAgreement(const Context& ctx, const CollArgs& args, Choice* out);
  /// The model the ranking uses now (the shared-cores constants while contended).
  CommCostModel modelNow() const;
  /// Every kContentionCalls calls: the ranks' agreement on contention (see above).
  ncclResult_t observe(const Context& ctx, InternalRunner& runner);
  ncclResult_t runAgreement(InternalRunner& runner, double* values, int n, kernels::BaseOp op);

  CommCostModel model_;
  std::string algo_, proto_;
  int nranks_ = 0;
  std::array<Ranked, 32> cache_{};
  AdaptiveChoice adaptive_;
  bool agreeing_ = false;  ///< the agreement itself runs the model's choice
  std::atomic<const char*> last_{nullptr};
  bool memoryLinks_ = false;  ///< every rank's peers share memory: contention is watched
  bool contended_ = false;
  uint64_t calls_ = 0;
  uint64_t waitsSeen_ = 0, unspunSeen_ = 0;
  int freeSpinIters_ = -1;  ///< the team's spin ceiling while the cores are free
};

}  // namespace braid
