// Data-parallel training of a two-hidden-layer MLP on scikit-learn's handwritten digits, over
// Braid: every rank holds the whole model, takes its shard of each global batch through the
// DistributedSampler, and GradSync averages the gradients (bucketed, overlapped with the
// backward pass) so every replica takes the same step as one model trained on the global batch.
//
//   build/bin/braidrun -n 4 build/bin/train_digits            (local processes)
//   mpirun -np 4 build/bin/train_digits                       (builds with MPI)
//   build/bin/train_digits --help
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid/gradsync.h"
#include "braid/sampler.h"
#include "dataset.h"
#include "launch.h"
#include "mlp.h"

namespace {

using braid::examples::Dataset;
using braid::examples::Mlp;

struct Options {
  std::string data = BRAID_DIGITS_CSV;  // decompressed at build time, "" when not found
  int epochs = 20;
  int globalBatch = 64;  // split evenly over the ranks and micro-batches
  int accumulate = 1;    // micro-batches per step: all but the last under GradSync::NoSync
  int hidden = 128;
  float learningRate = 0.05f;
  float momentum = 0.9f;
  uint64_t seed = 1;
  double heldOut = 0.2;
  braid::WireFormat wire = braid::WireFormat::kNative;
};

[[noreturn]] void usage(const char* problem) {
  if (problem) std::fprintf(stderr, "train_digits: %s\n", problem);
  std::fprintf(stderr,
               "usage: train_digits [--data digits.csv] [--epochs 20] [--global-batch 64]\n"
               "                    [--hidden 128] [--lr 0.05] [--momentum 0.9] [--seed 1]\n"
               "                    [--held-out 0.2] [--wire fp32|fp16|bf16] [--accumulate 1]\n"
               "The global batch is divided evenly over the ranks and the --accumulate\n"
               "micro-batches of each step (it must be a multiple of their product), so any\n"
               "rank count and accumulation trains the same model.\n");
  std::exit(problem ? 2 : 0);
}

Options parseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(nullptr);
    if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
    const char* value = argv[++i];
    char* end = nullptr;
    auto number = [&](double low, double high) {
      const double v = std::strtod(value, &end);
      if (end == value || *end != '\0' || !(v >= low && v <= high)) {
        char range[64];
        std::snprintf(range, sizeof(range), ": expected a number in [%g, %g]", low, high);
        usage((arg + " " + value + range).c_str());
      }
      return v;
    };
    if (arg == "--data") {
      o.data = value;
    } else if (arg == "--epochs") {
      o.epochs = static_cast<int>(number(1, 1000));
    } else if (arg == "--global-batch") {
      o.globalBatch = static_cast<int>(number(1, 1 << 20));
    } else if (arg == "--hidden") {
      o.hidden = static_cast<int>(number(1, 1 << 14));
    } else if (arg == "--lr") {
      o.learningRate = static_cast<float>(number(0, 10));
    } else if (arg == "--momentum") {
      o.momentum = static_cast<float>(number(0, 1));
    } else if (arg == "--seed") {
      o.seed = static_cast<uint64_t>(number(0, 1e15));
    } else if (arg == "--accumulate") {
      o.accumulate = static_cast<int>(number(1, 1 << 10));
    } else if (arg == "--held-out") {
      o.heldOut = number(0.01, 0.99);
    } else if (arg == "--wire") {
      const std::string w = value;
      if (w == "fp32") {
        o.wire = braid::WireFormat::kNative;
      } else if (w == "fp16") {
        o.wire = braid::WireFormat::kFloat16;
      } else if (w == "bf16") {
        o.wire = braid::WireFormat::kBFloat16;
      } else {
        usage(("--wire " + w + ": expected fp32, fp16 or bf16").c_str());
      }
    } else {
      usage(("unknown option " + arg).c_str());
    }
  }
  return o;
}

[[noreturn]] void die(int rank, const std::string& what) {
  std::fprintf(stderr, "train_digits rank %d: %s\n", rank, what.c_str());
  std::exit(1);
}

void check(int rank, ncclResult_t result, const braid::GradSync& sync, const char* what) {
  if (result != ncclSuccess) die(rank, std::string(what) + ": " + sync.lastError());
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

std::vector<braid::TensorRef> parameterRefs(Mlp& model) {
  std::vector<braid::TensorRef> refs;
  for (int t = 0; t < model.tensors(); ++t) {
    refs.push_back({model.parameter(t).data(), model.parameterCount(t), ncclFloat32});
  }
  return refs;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parseOptions(argc, argv);
  braid::examples::Launch launch;
  std::string error;
  if (!braid::examples::joinCommunicator(&argc, &argv, &launch, &error)) die(launch.rank, error);
  const int rank = launch.rank, nranks = launch.nranks;
  const bool lead = rank == 0;
  const int split = nranks * options.accumulate;
  if (options.globalBatch % split != 0) {
    die(rank, "--global-batch " + std::to_string(options.globalBatch) + " is not a multiple of " +
                  std::to_string(nranks) + " ranks x " + std::to_string(options.accumulate) +
                  " micro-batches");
  }
  const int batch = options.globalBatch / split;  // per rank and micro-batch

  Dataset all, train, heldOut;
  if (options.data.empty()) {
    die(rank, "no data: install python3-sklearn (tools/setup) and rebuild, or pass --data");
  }
  if (!braid::examples::loadDigitsCsv(options.data, &all, &error)) die(rank, error);
  braid::examples::splitDataset(all, options.heldOut, options.seed, &train, &heldOut);

  // Each replica starts from its own random weights; the broadcast from rank 0 makes them equal.
  Mlp model({all.features, options.hidden, options.hidden, 10}, options.seed + 1000 * rank);
  braid::examples::SgdMomentum optimizer(model, options.learningRate, options.momentum);
  braid::GradSyncOptions syncOptions;
  syncOptions.wire = options.wire;
  // The model is small (tens of KiB of gradients): smaller buckets still overlap something.
  syncOptions.bucketCapBytes = 64 << 10;
  syncOptions.firstBucketCapBytes = 16 << 10;
  braid::GradSync sync(launch.comm, syncOptions);
  std::vector<std::vector<float>> gradientStore(model.tensors());
  for (int t = 0; t < model.tensors(); ++t) {
    gradientStore[t].resize(model.parameterCount(t));
    int index = -1;
    const std::string name = "layer" + std::to_string(t / 2 + 1) + (t % 2 ? ".bias" : ".weight");
    check(rank,
          sync.addGradient({gradientStore[t].data(), gradientStore[t].size(), ncclFloat32}, name,
                           &index),
          sync, "addGradient");
  }
  check(rank, sync.finalize(), sync, "finalize");
  check(rank, sync.broadcastParameters(parameterRefs(model), 0), sync, "broadcastParameters");
  check(rank, sync.verifyParametersEqual(parameterRefs(model)), sync, "verifyParametersEqual");

  braid::DistributedSampler sampler(train.size(), nranks, rank, /*shuffle=*/true, options.seed);
  // Incomplete batches are dropped, so every rank count takes the same global batches.
  const size_t stepsPerEpoch = sampler.numSamples() / (batch * options.accumulate);
  if (lead) {
    std::printf(
        "train_digits: %d rank(s), batch %d per rank x %d micro-batch(es) (global %d), %zu train "
        "/ %zu held-out samples, %zu steps per epoch\n",
        nranks, batch, options.accumulate, options.globalBatch, train.size(), heldOut.size(),
        stepsPerEpoch);
    std::printf("model 64-%d-%d-10: %zu parameters (%.1f KiB of gradients), wire %s\n",
                options.hidden, options.hidden, model.totalParameters(),
                model.totalParameters() * 4 / 1024.0,
                options.wire == braid::WireFormat::kNative    ? "fp32"
                : options.wire == braid::WireFormat::kFloat16 ? "fp16"
                                                              : "bf16");
  }

  std::vector<float> batchSamples;
  std::vector<int> batchLabels;
  const auto start = std::chrono::steady_clock::now();
  for (int epoch = 0; epoch < options.epochs; ++epoch) {
    sampler.setEpoch(epoch);
    const std::vector<size_t> mine = sampler.indices();
    std::vector<double> stepSeconds, waitSeconds;
    double lossSum[2] = {0, 0};  // summed loss, samples: averaged over ranks below
    for (size_t step = 0; step < stepsPerEpoch; ++step) {
      const auto stepStart = std::chrono::steady_clock::now();
      std::vector<float*> gradients(model.tensors());
      for (int micro = 0; micro < options.accumulate; ++micro) {
        // Micro-batches before the last only accumulate locally; the last one communicates.
        sync.setSyncEnabled(micro + 1 == options.accumulate);
        const size_t first = (step * options.accumulate + micro) * batch;
        train.gather(mine, first, batch, &batchSamples, &batchLabels);
        lossSum[0] += model.forward(batchSamples.data(), batchLabels.data(), batch);
        lossSum[1] += batch;
        for (int t = 0; t < model.tensors(); ++t) {
          gradients[t] = static_cast<float*>(sync.gradientData(t));
        }
        model.backward(gradients, 1.0f / (batch * options.accumulate),
                       [&](int t) { check(rank, sync.markReady(t), sync, "markReady"); });
        check(rank, sync.finish(), sync, "finish");
      }
      for (int t = 0; t < model.tensors(); ++t) {
        gradients[t] = static_cast<float*>(sync.gradientData(t));
      }
      optimizer.step(model, std::vector<const float*>(gradients.begin(), gradients.end()));
      stepSeconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - stepStart).count());
      waitSeconds.push_back(sync.lastStep().finishWaitSeconds);
    }
    if (ncclAllReduce(lossSum, lossSum, 2, ncclFloat64, ncclSum, launch.comm, nullptr) !=
        ncclSuccess) {
      die(rank, std::string("loss allreduce: ") + ncclGetLastError(launch.comm));
    }
    if (lead) {
      int correct = 0;
      const double heldOutLoss = model.forward(heldOut.samples.data(), heldOut.labels.data(),
                                               static_cast<int>(heldOut.size()), &correct) /
                                 heldOut.size();
      std::printf(
          "epoch %2d  train loss %.4f  held-out loss %.4f  accuracy %6.2f%%  "
          "step %.3f ms (median)  finish wait %.3f ms\n",
          epoch + 1, lossSum[0] / lossSum[1], heldOutLoss, 100.0 * correct / heldOut.size(),
          median(stepSeconds) * 1e3, median(waitSeconds) * 1e3);
      std::fflush(stdout);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  check(rank, sync.verifyParametersEqual(parameterRefs(model)), sync, "verifyParametersEqual");
  if (lead) {
    std::printf("trained %d epochs in %.2f s; parameters bitwise identical on all %d rank(s)\n",
                options.epochs, seconds, nranks);
  }
  braid::examples::leaveCommunicator(&launch);
  return 0;
}
