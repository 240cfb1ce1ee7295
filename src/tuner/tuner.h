// The tuner: which algorithm runs a call. NCCL_ALGO and NCCL_PROTO filter the registered
// algorithms (algo_filter.h); Self and the always-preferred ones come first where they apply;
// the cost model (cost_model.h) ranks the rest; for allreduce between ranks that share memory
// with a core each, the adaptive choice (adaptive.h) may run a near candidate instead. The
// model's inputs are the same on every rank (comm init passes rank 0's constants), so every rank
// makes the same choice. One Tuner per communicator, with one cache: a size's ranking, choice
// and fallback are worked out once and looked up after that.
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/config.h"
#include "tuner/adaptive.h"
#include "tuner/cost_model.h"

namespace braid {

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
  /// The model's estimate of a batch of `transfers` point-to-point transfers of `bytes` in all.
  double estimateP2pUs(size_t transfers, size_t bytes) const;
  /// The algorithm of the last collective chosen (braidCommGetLastAlgorithm); null before one.
  const char* lastAlgorithm() const { return last_.load(std::memory_order_relaxed); }

 private:
  /// A size's worked-out answer: the usable algorithms in the model's order (preferred ones
  /// first), with their estimates.
  struct Ranked {
    bool valid = false;
    CollType coll = CollType::kAllReduce;
    size_t bytes = 0;
    bool device = false;
    std::vector<const Algorithm*> usable;
    std::vector<double> us;
    bool preferred = false;  ///< usable[0] is always-preferred (no adaptation, no near list)
  };
  class Adaptation;

  Ranked& rank(const Context& ctx, const CollArgs& args);
  bool adapts(const CollArgs& args) const;
  ncclResult_t noneLeft(const CollArgs& args) const;

  CommCostModel model_;
  std::string algo_, proto_;
  int nranks_ = 0;
  std::array<Ranked, 32> cache_{};
  AdaptiveChoice adaptive_;
  bool agreeing_ = false;  ///< the agreement itself runs the model's choice
  std::atomic<const char*> last_{nullptr};
};

}  // namespace braid
