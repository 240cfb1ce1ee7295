// A labelled data set in memory: samples as rows of floats, one integer class per row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::examples {

struct Dataset {
  int features = 0;
  std::vector<float> samples;  ///< size() x features, row-major
  std::vector<int> labels;

  size_t size() const { return labels.size(); }
  const float* sample(size_t i) const { return &samples[i * static_cast<size_t>(features)]; }
  /// The rows `indices[first, first + count)`, copied into one batch.
  void gather(const std::vector<size_t>& indices, size_t first, size_t count,
              std::vector<float>* batchSamples, std::vector<int>* batchLabels) const;
};

/// Reads scikit-learn's digits.csv (64 pixel values 0..16, then the digit, per line). Pixels are
/// scaled to [0, 1]. On failure returns false with the reason (file, line) in *error.
bool loadDigitsCsv(const std::string& path, Dataset* out, std::string* error);

/// Splits `all` into a training and a held-out set: a fixed shuffle from `seed`, the last
/// `heldOutFraction` of it held out. Every rank computes the same split.
void splitDataset(const Dataset& all, double heldOutFraction, uint64_t seed, Dataset* train,
                  Dataset* heldOut);

}  // namespace braid::examples
