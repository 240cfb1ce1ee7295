// Shared pieces of the GradSync tests: inputs known from (seed, rank, gradient, element, step),
// the average they must produce (NCCL's: the sum of each rank's value times 1/n rounded to the
// type, each product rounded; in float64), buffers per gradient, and a scenario runner that
// registers a model, runs steps (synced or not, in any marking order) and checks every element.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "braid/gradsync.h"
#include "harness/rank_harness.h"

namespace braid::gradsync_test {

struct GradSpec {
  size_t count = 0;
  ncclDataType_t dtype = ncclFloat32;
};

/// k/8 with |k| <= 64 (16 for fp16/bf16, so that sums of a few ranks stay exact there too), k
/// from the shared words (verifiable/input_words.h) of (seed, gradient, step), rank and element.
double inputValue(uint64_t seed, int rank, int gradient, size_t element, int step,
                  ncclDataType_t dtype);
/// A value with a full fp32 mantissa in [-1, 1) (for the wire formats, which must round).
float roughValue(uint64_t seed, int rank, int gradient, size_t element, int step);

void storeValue(void* data, size_t index, ncclDataType_t dtype, double value);
double loadValue(const void* data, size_t index, ncclDataType_t dtype);
size_t dtypeBytes(ncclDataType_t dtype);
/// 2^-11 (fp16), 2^-8 (bf16), 2^-24 (fp32), 2^-53 (fp64): the relative error of one rounding.
double unitRoundoff(ncclDataType_t dtype);

/// One separately allocated, 64-byte aligned buffer per gradient.
class Buffers {
 public:
  explicit Buffers(const std::vector<GradSpec>& specs);
  void* data(int g) const { return buffers_[g].get(); }
  size_t size() const { return buffers_.size(); }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::vector<std::unique_ptr<void, Free>> buffers_;
};

struct Scenario {
  std::vector<GradSpec> model;
  GradSyncOptions options;
  std::vector<bool> syncPattern = {true, true, true};  ///< one entry per step
  uint64_t seed = 1;
  /// Order in which `rank` marks the gradients in `step`; default: reverse registration order.
  std::function<std::vector<int>(int rank, int step, int gradients)> markOrder;
  /// Called after finalize() with the GradSync (checks of the initial layout).
  std::function<void(test::RankContext&, GradSync&)> afterFinalize;
  /// Called after every finish() with the GradSync (extra checks).
  std::function<void(test::RankContext&, GradSync&, int step)> afterFinish;
};

/// Runs `scenario` on this rank; every problem goes to ctx.fail with the gradient, element and
/// values named.
void runScenario(test::RankContext& ctx, const Scenario& scenario);
/// The same on a communicator the caller made (and destroys).
void runSteps(test::RankContext& ctx, ncclComm_t comm, const Scenario& scenario);

/// Registers `model` (names "g0", "g1", ...) and finalizes; false (with ctx.fail) on error.
bool registerModel(test::RankContext& ctx, GradSync& sync, const std::vector<GradSpec>& model,
                   const Buffers* buffers);

/// A mixed model with odd sizes: 0, 1, primes, unaligned, one larger than the small caps.
std::vector<GradSpec> oddModel();

}  // namespace braid::gradsync_test
