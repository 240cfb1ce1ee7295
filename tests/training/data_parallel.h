// Data-parallel training of the example's MLP (examples/mlp) for the equivalence tests: the same
// training run done three ways, so their parameters can be compared after every step:
//   - dataParallelRank: one rank of N, per-rank batch b, gradients averaged through GradSync;
//   - globalBatchReference: one process, no communicator, batch N*b over the same data order;
//   - shardwiseReference: one process that computes every rank's gradient itself and averages
//     them in rank order ((g0 + g1) / 2 for two ranks): the reduction order of an allreduce over
//     two ranks, so the result must match N ranks bit for bit there.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "braid/gradsync.h"
#include "dataset.h"
#include "harness/rank_harness.h"
#include "mlp.h"

namespace braid::training_test {

using Parameters = std::vector<std::vector<float>>;  // one vector per tensor

struct TrainSpec {
  int nranks = 1;
  int batch = 4;       ///< per rank and micro-batch
  int accumulate = 1;  ///< micro-batches per step (all but the last under GradSync::NoSync)
  int steps = 16;
  float learningRate = 0.1f;
  float momentum = 0.9f;
  uint64_t seed = 11;
  GradSyncOptions sync;  ///< what dataParallelRank gives GradSync
};

/// 100 samples of 10 Gaussian blobs in 24 dimensions: learnable in a few steps, not trivially.
const examples::Dataset& blobs();
/// The model every run trains: 24-20-16-10.
examples::Mlp makeModel(uint64_t seed);
/// Steps per epoch when ranks together take nranks * batch * accumulate samples per step (the
/// incomplete tail batch is dropped, so every rank count walks the data the same way).
int stepsPerEpoch(const TrainSpec& spec);

/// One rank of a data-parallel run (call inside a harness rank function). Reports:
///   "params"   the final parameters (rank 0 only; encodeParameters),
///   "digests"  a hash of the parameters after every step, comma-separated,
///   "bytesReduced", "wireBytes", "buckets"   the last step's StepStats.
/// Also checks, collectively after every step, that all ranks hold identical parameters.
void dataParallelRank(test::RankContext& ctx, const TrainSpec& spec);

/// One process, batch nranks * batch * accumulate per step, same data order and start.
Parameters globalBatchReference(const TrainSpec& spec);
/// One process computing each rank's (and micro-batch's) gradient and combining them in the
/// order an allreduce over two ranks does.
Parameters shardwiseReference(const TrainSpec& spec);

/// Mean cross-entropy of `params` over the whole data set.
double meanLoss(const Parameters& params);
Parameters initialParameters(const TrainSpec& spec);

std::string encodeParameters(const Parameters& params);
Parameters decodeParameters(const std::string& text);

/// Per tensor, max |a - b| / max |b|; the largest over tensors.
double relativeDifference(const Parameters& a, const Parameters& b);
/// The same for the change from `start`: max |(a - start) - (b - start)| / max |b - start|.
double relativeUpdateDifference(const Parameters& a, const Parameters& b, const Parameters& start);
bool bitwiseEqual(const Parameters& a, const Parameters& b);

}  // namespace braid::training_test
