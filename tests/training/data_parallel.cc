#include "data_parallel.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "braid/sampler.h"

namespace braid::training_test {
namespace {

using examples::Dataset;
using examples::Mlp;

constexpr int kFeatures = 24;
constexpr int kClasses = 10;
constexpr size_t kSamples = 100;

Parameters parametersOf(const Mlp& model) {
  Parameters p;
  for (int t = 0; t < model.tensors(); ++t) p.push_back(model.parameter(t));
  return p;
}

void setParameters(Mlp* model, const Parameters& p) {
  for (int t = 0; t < model->tensors(); ++t) model->parameter(t) = p[t];
}

uint64_t digest(const Mlp& model) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes of every tensor
  for (int t = 0; t < model.tensors(); ++t) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(model.parameter(t).data());
    for (size_t i = 0; i < model.parameterCount(t) * sizeof(float); ++i) {
      h = (h ^ bytes[i]) * 1099511628211ull;
    }
  }
  return h;
}

// Positions [first, first + count) of what the sampler gives `rank` of `nranks` in the epoch of
// global step `step`.
std::vector<size_t> sampleRows(const TrainSpec& spec, int nranks, int rank, int step, size_t first,
                               size_t count) {
  DistributedSampler sampler(blobs().size(), nranks, rank, /*shuffle=*/true, spec.seed);
  sampler.setEpoch(static_cast<uint64_t>(step / stepsPerEpoch(spec)));
  const std::vector<size_t> mine = sampler.indices();
  return std::vector<size_t>(mine.begin() + first, mine.begin() + first + count);
}

// What `rank` takes for micro-batch `micro` of global step `step`.
std::vector<size_t> microBatchRows(const TrainSpec& spec, int rank, int step, int micro) {
  const size_t stepInEpoch = static_cast<size_t>(step % stepsPerEpoch(spec));
  const size_t first = (stepInEpoch * spec.accumulate + micro) * spec.batch;
  return sampleRows(spec, spec.nranks, rank, step, first, spec.batch);
}

// The gradient of the mean-loss share `scale` of the given rows.
Parameters gradientOf(Mlp& model, const std::vector<size_t>& rows, float scale) {
  std::vector<float> x;
  std::vector<int> y;
  blobs().gather(rows, 0, rows.size(), &x, &y);
  model.forward(x.data(), y.data(), static_cast<int>(rows.size()));
  Parameters g(model.tensors());
  std::vector<float*> pointers;
  for (int t = 0; t < model.tensors(); ++t) {
    g[t].resize(model.parameterCount(t));
    pointers.push_back(g[t].data());
  }
  model.backward(pointers, scale, [](int) {});
  return g;
}

void applyStep(Mlp& model, examples::SgdMomentum& optimizer, const Parameters& g) {
  std::vector<const float*> pointers;
  for (const auto& t : g) pointers.push_back(t.data());
  optimizer.step(model, pointers);
}

std::string describe(ncclResult_t r, const GradSync& sync) {
  return std::string(ncclGetErrorString(r)) + ": " + sync.lastError();
}

}  // namespace

const Dataset& blobs() {
  static const Dataset data = [] {
    Dataset d;
    d.features = kFeatures;
    std::mt19937_64 engine(2024);
    auto uniform = [&] { return static_cast<float>(engine() >> 40) * (1.0f / 16777216.0f); };
    std::vector<float> centres(kClasses * kFeatures);
    for (float& c : centres) c = 2.0f * uniform() - 1.0f;
    for (size_t i = 0; i < kSamples; ++i) {
      const int label = static_cast<int>(engine() % kClasses);
      d.labels.push_back(label);
      for (int f = 0; f < kFeatures; ++f) {
        // Sum of uniforms: a roughly Gaussian spread comparable to the centres' distances.
        const float noise = (uniform() + uniform() + uniform() - 1.5f) * 0.8f;
        d.samples.push_back(centres[label * kFeatures + f] + noise);
      }
    }
    return d;
  }();
  return data;
}

Mlp makeModel(uint64_t seed) {
  return Mlp({kFeatures, 20, 16, kClasses}, seed);
}

int stepsPerEpoch(const TrainSpec& spec) {
  return static_cast<int>(blobs().size() /
                          static_cast<size_t>(spec.nranks * spec.batch * spec.accumulate));
}

Parameters initialParameters(const TrainSpec& spec) {
  return parametersOf(makeModel(spec.seed));
}

void dataParallelRank(test::RankContext& ctx, const TrainSpec& spec) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  {
    // Every replica starts elsewhere: only the broadcast from rank 0 makes them equal.
    Mlp model = makeModel(spec.seed + 1000 * static_cast<uint64_t>(ctx.rank()));
    examples::SgdMomentum optimizer(model, spec.learningRate, spec.momentum);
    GradSync sync(comm, spec.sync);
    std::vector<std::vector<float>> own(model.tensors());
    for (int t = 0; t < model.tensors(); ++t) {
      own[t].assign(model.parameterCount(t), std::nanf(""));  // poisoned: backward overwrites
      int index = -1;
      ncclResult_t r = sync.addGradient({own[t].data(), own[t].size(), ncclFloat32},
                                        "tensor" + std::to_string(t), &index);
      if (r != ncclSuccess || index != t) return ctx.fail("addGradient: " + describe(r, sync));
    }
    std::vector<TensorRef> params;
    for (int t = 0; t < model.tensors(); ++t) {
      params.push_back({model.parameter(t).data(), model.parameterCount(t), ncclFloat32});
    }
    ncclResult_t r = sync.finalize();
    if (r == ncclSuccess) r = sync.broadcastParameters(params, 0);
    if (r == ncclSuccess) r = sync.verifyParametersEqual(params);
    if (r != ncclSuccess) return ctx.fail("setup: " + describe(r, sync));

    std::string digests;
    for (int step = 0; step < spec.steps; ++step) {
      std::vector<float*> gradients;
      for (int micro = 0; micro < spec.accumulate; ++micro) {
        const bool last = micro + 1 == spec.accumulate;
        sync.setSyncEnabled(last);
        gradients.clear();
        for (int t = 0; t < model.tensors(); ++t) {
          gradients.push_back(static_cast<float*>(sync.gradientData(t)));
        }
        std::vector<float> x;
        std::vector<int> y;
        const auto rows = microBatchRows(spec, ctx.rank(), step, micro);
        blobs().gather(rows, 0, rows.size(), &x, &y);
        model.forward(x.data(), y.data(), spec.batch);
        model.backward(gradients, 1.0f / static_cast<float>(spec.batch * spec.accumulate),
                       [&](int t) {
                         ncclResult_t m = sync.markReady(t);
                         if (m != ncclSuccess) ctx.fail("markReady: " + describe(m, sync));
                       });
        r = sync.finish();
        if (r != ncclSuccess) return ctx.fail("finish: " + describe(r, sync));
      }
      // Where the averaged gradients are now (bucket views may have moved in a rebuild).
      gradients.clear();
      for (int t = 0; t < model.tensors(); ++t) {
        gradients.push_back(static_cast<float*>(sync.gradientData(t)));
      }
      applyStep(model, optimizer, [&] {
        Parameters g;
        for (int t = 0; t < model.tensors(); ++t) {
          g.emplace_back(gradients[t], gradients[t] + model.parameterCount(t));
        }
        return g;
      }());
      r = sync.verifyParametersEqual(params);
      if (r != ncclSuccess) {
        return ctx.fail("step " + std::to_string(step) + ": replicas differ: " + describe(r, sync));
      }
      char hex[24];
      std::snprintf(hex, sizeof(hex), "%016llx,", static_cast<unsigned long long>(digest(model)));
      digests += hex;
    }
    ctx.report("digests", digests);
    ctx.report("bytesReduced", std::to_string(sync.lastStep().bytesReduced));
    ctx.report("wireBytes", std::to_string(sync.lastStep().wireBytes));
    ctx.report("buckets", std::to_string(sync.lastStep().buckets));
    if (ctx.rank() == 0) ctx.report("params", encodeParameters(parametersOf(model)));
  }
  ncclCommDestroy(comm);
}

Parameters globalBatchReference(const TrainSpec& spec) {
  Mlp model = makeModel(spec.seed);
  examples::SgdMomentum optimizer(model, spec.learningRate, spec.momentum);
  const int globalBatch = spec.nranks * spec.batch * spec.accumulate;
  for (int step = 0; step < spec.steps; ++step) {
    const size_t stepInEpoch = static_cast<size_t>(step % stepsPerEpoch(spec));
    const auto rows = sampleRows(spec, 1, 0, step, stepInEpoch * globalBatch, globalBatch);
    applyStep(model, optimizer, gradientOf(model, rows, 1.0f / static_cast<float>(globalBatch)));
  }
  return parametersOf(model);
}

Parameters shardwiseReference(const TrainSpec& spec) {
  Mlp model = makeModel(spec.seed);
  examples::SgdMomentum optimizer(model, spec.learningRate, spec.momentum);
  const float scale = 1.0f / static_cast<float>(spec.batch * spec.accumulate);
  for (int step = 0; step < spec.steps; ++step) {
    Parameters sum;
    for (int rank = 0; rank < spec.nranks; ++rank) {
      // This rank's micro-batches, summed in order (what GradSync's accumulator does).
      Parameters local;
      for (int micro = 0; micro < spec.accumulate; ++micro) {
        Parameters g = gradientOf(model, microBatchRows(spec, rank, step, micro), scale);
        if (local.empty()) {
          local = std::move(g);
        } else {
          for (size_t t = 0; t < g.size(); ++t) {
            for (size_t k = 0; k < g[t].size(); ++k) local[t][k] += g[t][k];
          }
        }
      }
      if (sum.empty()) {
        sum = std::move(local);
      } else {
        for (size_t t = 0; t < sum.size(); ++t) {
          for (size_t k = 0; k < sum[t].size(); ++k) sum[t][k] += local[t][k];
        }
      }
    }
    for (auto& t : sum) {
      for (float& v : t) v /= static_cast<float>(spec.nranks);
    }
    applyStep(model, optimizer, sum);
  }
  return parametersOf(model);
}

double meanLoss(const Parameters& params) {
  Mlp model = makeModel(0);
  setParameters(&model, params);
  const Dataset& d = blobs();
  return model.forward(d.samples.data(), d.labels.data(), static_cast<int>(d.size())) /
         static_cast<double>(d.size());
}

std::string encodeParameters(const Parameters& params) {
  std::string text;
  for (const auto& t : params) {
    text += std::to_string(t.size()) + ":";
    const auto* bytes = reinterpret_cast<const unsigned char*>(t.data());
    static const char kHex[] = "0123456789abcdef";
    for (size_t i = 0; i < t.size() * sizeof(float); ++i) {
      text += kHex[bytes[i] >> 4];
      text += kHex[bytes[i] & 15];
    }
    text += ";";
  }
  return text;
}

Parameters decodeParameters(const std::string& text) {
  Parameters params;
  size_t at = 0;
  while (at < text.size()) {
    const size_t colon = text.find(':', at);
    if (colon == std::string::npos) break;
    const size_t count = std::stoul(text.substr(at, colon - at));
    std::vector<float> t(count);
    auto* bytes = reinterpret_cast<unsigned char*>(t.data());
    for (size_t i = 0; i < count * sizeof(float); ++i) {
      bytes[i] =
          static_cast<unsigned char>(std::stoi(text.substr(colon + 1 + 2 * i, 2), nullptr, 16));
    }
    params.push_back(std::move(t));
    at = colon + 1 + 2 * count * sizeof(float) + 1;
  }
  return params;
}

double relativeDifference(const Parameters& a, const Parameters& b) {
  if (a.size() != b.size()) return INFINITY;
  double worst = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    if (a[t].size() != b[t].size()) return INFINITY;
    double diff = 0, scale = 0;
    for (size_t k = 0; k < a[t].size(); ++k) {
      diff = std::max(diff, std::fabs(static_cast<double>(a[t][k]) - b[t][k]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[t][k])));
    }
    if (std::isnan(diff)) return INFINITY;
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

double relativeUpdateDifference(const Parameters& a, const Parameters& b, const Parameters& start) {
  if (a.size() != b.size() || a.size() != start.size()) return INFINITY;
  double worst = 0;
  for (size_t t = 0; t < a.size(); ++t) {
    if (a[t].size() != start[t].size() || b[t].size() != start[t].size()) return INFINITY;
    double diff = 0, scale = 0;
    for (size_t k = 0; k < a[t].size(); ++k) {
      diff = std::max(diff, std::fabs(static_cast<double>(a[t][k]) - b[t][k]));
      scale = std::max(scale, std::fabs(static_cast<double>(b[t][k]) - start[t][k]));
    }
    if (std::isnan(diff)) return INFINITY;
    worst = std::max(worst, scale > 0 ? diff / scale : diff);
  }
  return worst;
}

bool bitwiseEqual(const Parameters& a, const Parameters& b) {
  if (a.size() != b.size()) return false;
  for (size_t t = 0; t < a.size(); ++t) {
    if (a[t].size() != b[t].size() ||
        std::memcmp(a[t].data(), b[t].data(), a[t].size() * sizeof(float)) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace braid::training_test
