// The example's MLP (examples/mlp): backward against central finite differences of forward,
// gradients announced last layer first and each exactly once, buffers fully overwritten, and the
// same inputs giving bitwise the same gradients (what the exact equivalence tests rely on).
#include "mlp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

using braid::examples::Mlp;

struct Batch {
  std::vector<float> samples;
  std::vector<int> labels;
};

Batch randomBatch(const Mlp& model, int batch, uint64_t seed) {
  std::mt19937_64 engine(seed);
  Batch b;
  for (int i = 0; i < batch * model.inputs(); ++i) {
    b.samples.push_back(static_cast<float>(engine() % 2001) / 1000.0f - 1.0f);
  }
  for (int i = 0; i < batch; ++i) b.labels.push_back(static_cast<int>(engine() % model.classes()));
  return b;
}

std::vector<std::vector<float>> gradients(Mlp& model, const Batch& b, float scale,
                                          std::vector<int>* order = nullptr) {
  const int batch = static_cast<int>(b.labels.size());
  model.forward(b.samples.data(), b.labels.data(), batch);
  std::vector<std::vector<float>> g(model.tensors());
  std::vector<float*> pointers;
  for (int t = 0; t < model.tensors(); ++t) {
    g[t].assign(model.parameterCount(t), std::nanf(""));  // poison: all must be overwritten
    pointers.push_back(g[t].data());
  }
  model.backward(pointers, scale, [&](int t) {
    if (order) order->push_back(t);
  });
  return g;
}

TEST(Mlp, BackwardMatchesFiniteDifferences) {
  for (const std::vector<int>& widths :
       {std::vector<int>{5, 7, 3}, std::vector<int>{6, 9, 8, 4}, std::vector<int>{3, 4, 2, 2}}) {
    Mlp model(widths, 3);
    // Biases away from zero, so no ReLU sits on its kink where differences are meaningless.
    for (int t = 1; t < model.tensors(); t += 2) {
      for (float& v : model.parameter(t)) v = 0.1f;
    }
    const Batch b = randomBatch(model, 5, 9);
    const int batch = static_cast<int>(b.labels.size());
    const auto g = gradients(model, b, 1.0f);  // gradient of the summed loss
    for (int t = 0; t < model.tensors(); ++t) {
      for (size_t k = 0; k < model.parameterCount(t); ++k) {
        float& p = model.parameter(t)[k];
        const float saved = p;
        const float h = 1e-2f;
        p = saved + h;
        const double up = model.forward(b.samples.data(), b.labels.data(), batch);
        p = saved - h;
        const double down = model.forward(b.samples.data(), b.labels.data(), batch);
        p = saved;
        const double numeric = (up - down) / (2.0 * h);
        EXPECT_NEAR(g[t][k], numeric, 2e-2 * std::max(1.0, std::fabs(numeric)))
            << "tensor " << t << " element " << k << " of a " << widths.size() - 1
            << "-layer model";
      }
    }
  }
}

TEST(Mlp, ScaleMultipliesTheGradient) {
  Mlp model({8, 6, 4, 3}, 5);
  const Batch b = randomBatch(model, 7, 1);
  const auto whole = gradients(model, b, 1.0f);
  const auto quarter = gradients(model, b, 0.25f);  // a power of two: exact
  for (int t = 0; t < model.tensors(); ++t) {
    for (size_t k = 0; k < whole[t].size(); ++k) EXPECT_EQ(quarter[t][k], 0.25f * whole[t][k]);
  }
}

TEST(Mlp, GradientsReadyLastLayerFirstOnceEach) {
  Mlp model({4, 3, 3, 2}, 1);
  std::vector<int> order;
  gradients(model, randomBatch(model, 3, 2), 1.0f, &order);
  EXPECT_EQ(order, (std::vector<int>{5, 4, 3, 2, 1, 0}));
}

TEST(Mlp, SameInputsGiveBitwiseTheSameGradients) {
  Mlp model({64, 32, 32, 10}, 8);
  const Batch b = randomBatch(model, 17, 4);
  const auto first = gradients(model, b, 1.0f / 17);
  const auto second = gradients(model, b, 1.0f / 17);
  for (int t = 0; t < model.tensors(); ++t) {
    EXPECT_EQ(std::memcmp(first[t].data(), second[t].data(), first[t].size() * sizeof(float)), 0)
        << t;
  }
}

TEST(Mlp, SgdMomentumFollowsPyTorch) {
  Mlp model({2, 2}, 1);  // one layer: 4 weights, 2 biases
  model.parameter(0) = {1, 2, 3, 4};
  model.parameter(1) = {0, 0};
  braid::examples::SgdMomentum sgd(model, 0.5f, 0.5f);
  const std::vector<float> gw = {1, -1, 2, 0}, gb = {4, 8};
  sgd.step(model, {gw.data(), gb.data()});  // v = g; p -= 0.5 g
  EXPECT_EQ(model.parameter(0), (std::vector<float>{0.5f, 2.5f, 2, 4}));
  sgd.step(model, {gw.data(), gb.data()});  // v = 0.5 g + g = 1.5 g; p -= 0.75 g
  EXPECT_EQ(model.parameter(0), (std::vector<float>{-0.25f, 3.25f, 0.5f, 4}));
  EXPECT_EQ(model.parameter(1), (std::vector<float>{-5, -10}));
}

TEST(Mlp, BadShapesAreRejected) {
  EXPECT_THROW(Mlp({5}, 1), std::invalid_argument);
  EXPECT_THROW(Mlp({5, 0, 3}, 1), std::invalid_argument);
  Mlp model({3, 2}, 1);
  const float x[3] = {1, 2, 3};
  const int label = 2;  // only classes 0 and 1 exist
  EXPECT_THROW(model.forward(x, &label, 1), std::out_of_range);
}

}  // namespace
