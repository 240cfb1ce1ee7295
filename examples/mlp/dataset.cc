#include "dataset.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "braid/sampler.h"

namespace braid::examples {

void Dataset::gather(const std::vector<size_t>& indices, size_t first, size_t count,
                     std::vector<float>* batchSamples, std::vector<int>* batchLabels) const {
  const size_t width = static_cast<size_t>(features);
  batchSamples->resize(count * width);
  batchLabels->resize(count);
  for (size_t k = 0; k < count; ++k) {
    const size_t row = indices[first + k];
    std::copy(sample(row), sample(row) + width, batchSamples->data() + k * width);
    (*batchLabels)[k] = labels[row];
  }
}

bool loadDigitsCsv(const std::string& path, Dataset* out, std::string* error) {
  constexpr int kPixels = 64;
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  *out = Dataset{};
  out->features = kPixels;
  std::string line;
  for (int lineNumber = 1; std::getline(in, line); ++lineNumber) {
    if (line.empty()) continue;
    const char* cursor = line.c_str();
    for (int column = 0; column <= kPixels; ++column) {
      char* end = nullptr;
      const long value = std::strtol(cursor, &end, 10);
      const bool lastColumn = column == kPixels;
      const char expected = lastColumn ? '\0' : ',';
      // Accept a trailing '\r' (CRLF files) after the label.
      const bool separatorOk = *end == expected || (lastColumn && *end == '\r' && end[1] == '\0');
      const bool inRange = lastColumn ? (value >= 0 && value <= 9) : (value >= 0 && value <= 16);
      if (end == cursor || !separatorOk || !inRange) {
        *error = path + ":" + std::to_string(lineNumber) + ": column " +
                 std::to_string(column + 1) + " is not " +
                 (lastColumn ? "a digit 0-9" : "a pixel value 0-16") +
                 " (expected 65 comma-separated integers)";
        return false;
      }
      if (lastColumn) {
        out->labels.push_back(static_cast<int>(value));
      } else {
        out->samples.push_back(static_cast<float>(value) / 16.0f);
      }
      cursor = end + 1;
    }
  }
  if (out->labels.empty()) {
    *error = path + ": no samples";
    return false;
  }
  return true;
}

void splitDataset(const Dataset& all, double heldOutFraction, uint64_t seed, Dataset* train,
                  Dataset* heldOut) {
  const std::vector<size_t> order = DistributedSampler::permutation(all.size(), seed);
  const size_t heldOutCount =
      static_cast<size_t>(static_cast<double>(all.size()) * heldOutFraction);
  const size_t trainCount = all.size() - heldOutCount;
  for (Dataset* part : {train, heldOut}) {
    *part = Dataset{};
    part->features = all.features;
  }
  std::vector<size_t> trainRows(order.begin(), order.begin() + trainCount);
  std::vector<size_t> heldOutRows(order.begin() + trainCount, order.end());
  all.gather(trainRows, 0, trainRows.size(), &train->samples, &train->labels);
  all.gather(heldOutRows, 0, heldOutRows.size(), &heldOut->samples, &heldOut->labels);
}

}  // namespace braid::examples
