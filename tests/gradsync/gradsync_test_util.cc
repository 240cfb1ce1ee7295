#include "gradsync/gradsync_test_util.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "gradsync/element_ops.h"
#include "verifiable/element_codec.h"
#include "verifiable/exact_inputs.h"
#include "verifiable/input_words.h"

namespace braid::gradsync_test {

namespace {

// Gradient g at step s is its own family of words under the seed: (seed, g, s) -> sub-seed.
uint64_t wordOf(uint64_t seed, int rank, int gradient, size_t element, int step) {
  const uint64_t family = verifiable::subSeed(verifiable::subSeed(seed, gradient), step);
  return verifiable::inputWord(family, rank, element);
}

constexpr uint64_t kRoughValues = 0x5eed;

}  // namespace

double inputValue(uint64_t seed, int rank, int gradient, size_t element, int step,
                  ncclDataType_t dtype) {
  const int limit = dtype == ncclFloat16 || dtype == ncclBfloat16 ? 16 : 64;
  const uint64_t word = wordOf(seed, rank, gradient, element, step);
  return static_cast<double>(verifiable::uniformInteger(word, limit, true)) / 8.0;
}

float roughValue(uint64_t seed, int rank, int gradient, size_t element, int step) {
  const uint64_t h = wordOf(verifiable::subSeed(seed, kRoughValues), rank, gradient, element, step);
  return static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 23) - 1.0);
}

// The shared codec (verifiable/element_codec.h), not the library's conversions: the inputs and
// the checks do not lean on what they test.
void storeValue(void* data, size_t index, ncclDataType_t dtype, double value) {
  verifiable::storeElement(data, index, dtype, value);
}

double loadValue(const void* data, size_t index, ncclDataType_t dtype) {
  return verifiable::loadElement(data, index, dtype);
}

size_t dtypeBytes(ncclDataType_t dtype) {
  return gradsync::elementSize(dtype);
}

double unitRoundoff(ncclDataType_t dtype) {
  switch (dtype) {
    case ncclFloat16:
      return std::ldexp(1.0, -11);
    case ncclBfloat16:
      return std::ldexp(1.0, -8);
    case ncclFloat32:
      return std::ldexp(1.0, -24);
    default:
      return std::ldexp(1.0, -53);
  }
}

void Buffers::Free::operator()(void* p) const {
  std::free(p);
}

Buffers::Buffers(const std::vector<GradSpec>& specs) {
  for (const GradSpec& s : specs) {
    size_t bytes = (s.count * dtypeBytes(s.dtype) + 63) / 64 * 64 + 64;
    void* p = std::aligned_alloc(64, bytes);
    std::memset(p, 0, bytes);
    buffers_.emplace_back(p);
  }
}

bool registerModel(test::RankContext& ctx, GradSync& sync, const std::vector<GradSpec>& model,
                   const Buffers* buffers) {
  for (size_t g = 0; g < model.size(); g++) {
    int index = -1;
    TensorRef ref{buffers ? buffers->data(static_cast<int>(g)) : nullptr, model[g].count,
                  model[g].dtype};
    if (sync.addGradient(ref, "g" + std::to_string(g), &index) != ncclSuccess) {
      ctx.fail("addGradient " + std::to_string(g) + ": " + sync.lastError());
      return false;
    }
    if (index != static_cast<int>(g)) {
      ctx.fail("addGradient " + std::to_string(g) + " returned index " + std::to_string(index));
      return false;
    }
  }
  if (sync.finalize() != ncclSuccess) {
    ctx.fail("finalize: " + sync.lastError());
    return false;
  }
  return true;
}

std::vector<GradSpec> oddModel() {
  return {{1, ncclFloat32},    {0, ncclFloat32},  {7, ncclFloat64},    {13, ncclFloat32},
          {1031, ncclFloat32}, {3, ncclFloat16},  {4099, ncclFloat32}, {257, ncclBfloat16},
          {2, ncclFloat32},    {61, ncclFloat64}, {0, ncclFloat16},    {509, ncclFloat32}};
}

namespace {

std::string fmt(double v) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

}  // namespace

void runSteps(test::RankContext& ctx, ncclComm_t comm, const Scenario& s) {
  const int n = ctx.nranks(), me = ctx.rank();
  const int gradients = static_cast<int>(s.model.size());
  const bool views = s.options.gradientsAsBucketViews;
  {
    GradSync sync(comm, s.options);
    Buffers buffers(s.model);
    if (!registerModel(ctx, sync, s.model, views ? nullptr : &buffers)) return;
    if (s.afterFinalize) s.afterFinalize(ctx, sync);
    // Each rank's exact sum over the micro-steps since the last synced step (what it averages),
    // and sums of magnitudes (the scale of the rounding the reduced types may add).
    std::vector<std::vector<double>> own(gradients), magnitude(gradients);
    for (int g = 0; g < gradients; g++) {
      own[g].assign(s.model[g].count * n, 0.0);
      magnitude[g].assign(s.model[g].count, 0.0);
    }
    int microSteps = 0;
    for (int step = 0; step < static_cast<int>(s.syncPattern.size()); step++) {
      const bool synced = s.syncPattern[step];
      sync.setSyncEnabled(synced);
      for (int g = 0; g < gradients; g++) {
        void* data = views ? sync.gradientData(g) : buffers.data(g);
        for (size_t i = 0; i < s.model[g].count; i++) {
          for (int q = 0; q < n; q++) {
            double v = inputValue(s.seed, q, g, i, step, s.model[g].dtype);
            if (q == me) storeValue(data, i, s.model[g].dtype, v);
            own[g][i * n + q] += v;
            magnitude[g][i] += std::fabs(v);
          }
        }
      }
      microSteps++;
      std::vector<int> order;
      if (s.markOrder) {
        order = s.markOrder(me, step, gradients);
      } else {
        for (int g = gradients - 1; g >= 0; g--) order.push_back(g);
      }
      for (int g : order) {
        if (sync.markReady(g) != ncclSuccess)
          return ctx.fail("step " + std::to_string(step) + " markReady(" + std::to_string(g) +
                          "): " + sync.lastError());
        // Copy mode copies at markReady: poison the user buffer to prove finish() writes it.
        if (!views)
          for (size_t i = 0; i < s.model[g].count; i++)
            storeValue(buffers.data(g), i, s.model[g].dtype, std::nan(""));
      }
      if (sync.finish() != ncclSuccess)
        return ctx.fail("step " + std::to_string(step) + " finish: " + sync.lastError());
      if (sync.lastStep().synced != synced)
        ctx.fail("step " + std::to_string(step) + ": lastStep().synced is wrong");
      if (s.afterFinish) s.afterFinish(ctx, sync, step);
      if (!synced) continue;
      int bad = 0;
      for (int g = 0; g < gradients; g++) {
        const ncclDataType_t t = s.model[g].dtype;
        const void* data = views ? sync.gradientData(g) : buffers.data(g);
        // fp32 gradients on an fp16/bf16 wire are rounded like that type.
        const bool onWire = t == ncclFloat32 && s.options.wire != WireFormat::kNative;
        const ncclDataType_t reduced =
            !onWire ? t : (s.options.wire == WireFormat::kFloat16 ? ncclFloat16 : ncclBfloat16);
        const double u = unitRoundoff(reduced);
        // ncclAvg as NCCL computes it (and premulsum by GradSync's 1/n, the same scalar): each
        // rank's value, in the reduced type, times 1/n rounded to that type, rounded, summed.
        const double scalar = verifiable::averageScalar(reduced, n);
        for (size_t i = 0; i < s.model[g].count; i++) {
          double expected = 0;
          for (int q = 0; q < n; q++) {
            const double x = verifiable::roundToType(reduced, own[g][i * n + q]);
            expected += verifiable::roundToType(reduced, x * scalar);
          }
          const double got = loadValue(data, i, t);
          const double tolerance = (n + 2 + microSteps) * u * magnitude[g][i] / n;
          if (!(std::fabs(got - expected) <= tolerance) && bad++ < 5)
            ctx.fail("step " + std::to_string(step) + " gradient " + std::to_string(g) + " (" +
                     gradsync::dtypeName(t) + ") element " + std::to_string(i) + ": got " +
                     fmt(got) + ", expected " + fmt(expected) + " (tolerance " + fmt(tolerance) +
                     ")");
        }
        std::fill(own[g].begin(), own[g].end(), 0.0);
        std::fill(magnitude[g].begin(), magnitude[g].end(), 0.0);
      }
      microSteps = 0;
    }
  }
}

void runScenario(test::RankContext& ctx, const Scenario& s) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  runSteps(ctx, comm, s);
  ncclCommDestroy(comm);
}

}  // namespace braid::gradsync_test
