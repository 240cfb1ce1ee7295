#include "mlp.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace braid::examples {
namespace {

// out[0..n) += a * x[0..n): the one inner loop of every product here.
inline void axpy(float* __restrict out, float a, const float* __restrict x, int n) {
  for (int k = 0; k < n; ++k) out[k] += a * x[k];
}

// A float in [-bound, bound) from the top 24 bits of a 64-bit draw: the same on every platform,
// unlike std::uniform_real_distribution.
float uniformSymmetric(std::mt19937_64& engine, float bound) {
  const float unit = static_cast<float>(engine() >> 40) * (1.0f / 16777216.0f);
  return (2.0f * unit - 1.0f) * bound;
}

}  // namespace

Mlp::Mlp(std::vector<int> widths, uint64_t seed) : widths_(std::move(widths)) {
  if (widths_.size() < 2) throw std::invalid_argument("Mlp: needs at least inputs and classes");
  for (int w : widths_) {
    if (w < 1) throw std::invalid_argument("Mlp: layer width " + std::to_string(w));
  }
  std::mt19937_64 engine(seed);
  for (int l = 0; l < layers(); ++l) {
    const int in = widths_[l], out = widths_[l + 1];
    std::vector<float> weights(static_cast<size_t>(in) * out);
    const float bound = std::sqrt(6.0f / static_cast<float>(in));  // He uniform, for ReLU
    for (float& w : weights) w = uniformSymmetric(engine, bound);
    parameters_.push_back(std::move(weights));
    parameters_.emplace_back(static_cast<size_t>(out), 0.0f);
  }
  activations_.resize(layers());
}

size_t Mlp::totalParameters() const {
  size_t total = 0;
  for (const auto& p : parameters_) total += p.size();
  return total;
}

double Mlp::forward(const float* samples, const int* labels, int batch, int* correct) {
  batch_ = batch;
  labels_.assign(labels, labels + batch);
  activations_[0].assign(samples, samples + static_cast<size_t>(batch) * inputs());
  std::vector<float> next;
  for (int l = 0; l < layers(); ++l) {
    const int in = widths_[l], out = widths_[l + 1];
    const std::vector<float>& weights = parameters_[2 * l];
    const std::vector<float>& biases = parameters_[2 * l + 1];
    const std::vector<float>& input = activations_[l];
    next.assign(static_cast<size_t>(batch) * out, 0.0f);
    for (int s = 0; s < batch; ++s) {
      float* z = &next[static_cast<size_t>(s) * out];
      std::copy(biases.begin(), biases.end(), z);
      const float* x = &input[static_cast<size_t>(s) * in];
      for (int i = 0; i < in; ++i) {
        if (x[i] != 0.0f) axpy(z, x[i], &weights[static_cast<size_t>(i) * out], out);
      }
      if (l + 1 < layers()) {
        for (int o = 0; o < out; ++o) z[o] = std::max(z[o], 0.0f);
      }
    }
    if (l + 1 < layers()) activations_[l + 1].swap(next);
  }
  // next holds the logits: softmax and cross-entropy per sample.
  const int classes = this->classes();
  probabilities_.resize(static_cast<size_t>(batch) * classes);
  double loss = 0;
  for (int s = 0; s < batch; ++s) {
    const float* z = &next[static_cast<size_t>(s) * classes];
    float* p = &probabilities_[static_cast<size_t>(s) * classes];
    const int best = static_cast<int>(std::max_element(z, z + classes) - z);
    const float top = z[best];
    float sum = 0;
    for (int c = 0; c < classes; ++c) sum += (p[c] = std::exp(z[c] - top));
    for (int c = 0; c < classes; ++c) p[c] /= sum;
    const int label = labels[s];
    if (label < 0 || label >= classes)
      throw std::out_of_range("Mlp: label " + std::to_string(label));
    loss += static_cast<double>(std::log(sum) - (z[label] - top));
    if (correct && best == label) ++*correct;
  }
  return loss;
}

void Mlp::backward(const std::vector<float*>& gradients, float scale,
                   const std::function<void(int)>& ready) {
  if (static_cast<int>(gradients.size()) != tensors()) {
    throw std::invalid_argument("Mlp::backward: " + std::to_string(gradients.size()) +
                                " gradient buffers for " + std::to_string(tensors()) + " tensors");
  }
  const int batch = batch_;
  // dLoss/dlogits of the scaled summed loss: scale * (softmax - one-hot).
  std::vector<float> delta(probabilities_);
  for (int s = 0; s < batch; ++s) {
    float* d = &delta[static_cast<size_t>(s) * classes()];
    d[labels_[s]] -= 1.0f;
    for (int c = 0; c < classes(); ++c) d[c] *= scale;
  }
  std::vector<float> transposed, previous;
  for (int l = layers() - 1; l >= 0; --l) {
    const int in = widths_[l], out = widths_[l + 1];
    const std::vector<float>& input = activations_[l];
    float* weightGradient = gradients[2 * l];
    float* biasGradient = gradients[2 * l + 1];

    std::fill(biasGradient, biasGradient + out, 0.0f);
    for (int s = 0; s < batch; ++s)
      axpy(biasGradient, 1.0f, &delta[static_cast<size_t>(s) * out], out);
    ready(2 * l + 1);

    std::fill(weightGradient, weightGradient + static_cast<size_t>(in) * out, 0.0f);
    for (int s = 0; s < batch; ++s) {
      const float* x = &input[static_cast<size_t>(s) * in];
      const float* d = &delta[static_cast<size_t>(s) * out];
      for (int i = 0; i < in; ++i) {
        if (x[i] != 0.0f) axpy(weightGradient + static_cast<size_t>(i) * out, x[i], d, out);
      }
    }
    ready(2 * l);

    if (l == 0) break;
    // delta of the layer below: (delta . W^T) masked by ReLU. W^T (outputs x inputs) makes the
    // inner loop an axpy over a contiguous row again.
    const std::vector<float>& weights = parameters_[2 * l];
    transposed.resize(weights.size());
    for (int i = 0; i < in; ++i) {
      for (int o = 0; o < out; ++o) {
        transposed[static_cast<size_t>(o) * in + i] = weights[static_cast<size_t>(i) * out + o];
      }
    }
    previous.assign(static_cast<size_t>(batch) * in, 0.0f);
    for (int s = 0; s < batch; ++s) {
      float* back = &previous[static_cast<size_t>(s) * in];
      const float* d = &delta[static_cast<size_t>(s) * out];
      for (int o = 0; o < out; ++o) {
        if (d[o] != 0.0f) axpy(back, d[o], &transposed[static_cast<size_t>(o) * in], in);
      }
      const float* x = &input[static_cast<size_t>(s) * in];
      for (int i = 0; i < in; ++i) back[i] = x[i] > 0.0f ? back[i] : 0.0f;
    }
    delta.swap(previous);
  }
}

SgdMomentum::SgdMomentum(const Mlp& model, float learningRate, float momentum)
    : learningRate_(learningRate), momentum_(momentum) {
  for (int t = 0; t < model.tensors(); ++t) velocity_.emplace_back(model.parameterCount(t), 0.0f);
}

void SgdMomentum::step(Mlp& model, const std::vector<const float*>& gradients) {
  for (int t = 0; t < model.tensors(); ++t) {
    std::vector<float>& p = model.parameter(t);
    std::vector<float>& v = velocity_[t];
    const float* g = gradients[t];
    const size_t n = p.size();
    for (size_t k = 0; k < n; ++k) {
      v[k] = momentum_ * v[k] + g[k];
      p[k] -= learningRate_ * v[k];
    }
  }
}

}  // namespace braid::examples
