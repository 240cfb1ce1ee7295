// A multi-layer perceptron in plain C++: fully connected layers with ReLU between them, softmax
// cross-entropy on the last, SGD with momentum. Small enough to read, quick enough to train the
// digits set in a second, and deterministic: the same inputs give bitwise the same gradients
// (loops run in a fixed order; the inner loops are axpys over a row, which the compiler
// vectorises without reassociating any sum).
//
// Parameter tensors, in registration (creation) order: for layer l, tensor 2l holds the weights
// (inputs x outputs, row-major: row i is what input i adds to every output) and tensor 2l+1 the
// biases. The backward pass produces them in reverse: last layer first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace braid::examples {

class Mlp {
 public:
  /// widths: inputs, hidden layer sizes..., classes (at least two entries, all positive).
  /// Weights are He-uniform from `seed`, biases zero.
  Mlp(std::vector<int> widths, uint64_t seed);

  int layers() const { return static_cast<int>(widths_.size()) - 1; }
  int tensors() const { return 2 * layers(); }
  int inputs() const { return widths_.front(); }
  int classes() const { return widths_.back(); }
  const std::vector<int>& widths() const { return widths_; }

  std::vector<float>& parameter(int tensor) { return parameters_[tensor]; }
  const std::vector<float>& parameter(int tensor) const { return parameters_[tensor]; }
  size_t parameterCount(int tensor) const { return parameters_[tensor].size(); }
  size_t totalParameters() const;

  /// Runs `batch` samples (row-major, batch x inputs()) and keeps what backward() needs.
  /// Returns the summed cross-entropy over the batch; adds the number of samples whose
  /// arg-max is their label to *correct when given.
  double forward(const float* samples, const int* labels, int batch, int* correct = nullptr);

  /// Gradient of `scale` times the summed loss of the last forward() (scale = 1/batch gives the
  /// mean). Overwrites gradients[t] (parameterCount(t) floats each) and calls ready(t) as soon
  /// as tensor t is complete, last layer first, so a caller can start communicating it while
  /// the rest of the backward pass runs.
  void backward(const std::vector<float*>& gradients, float scale,
                const std::function<void(int tensor)>& ready);

 private:
  std::vector<int> widths_;
  std::vector<std::vector<float>> parameters_;
  // Per layer: its input activations (layer 0: a copy of the samples), batch x width.
  std::vector<std::vector<float>> activations_;
  std::vector<int> labels_;
  std::vector<float> probabilities_;  // batch x classes, from the last forward
  int batch_ = 0;
};

/// PyTorch's SGD with momentum (no dampening, no Nesterov): v = momentum * v + g; p -= lr * v.
class SgdMomentum {
 public:
  SgdMomentum(const Mlp& model, float learningRate, float momentum);
  void step(Mlp& model, const std::vector<const float*>& gradients);

 private:
  float learningRate_;
  float momentum_;
  std::vector<std::vector<float>> velocity_;
};

}  // namespace braid::examples
