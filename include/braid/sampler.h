// Data-parallel sharding of a data set's sample indices, with the semantics of PyTorch's
// torch.utils.data.DistributedSampler: every rank gets the same number of samples, the order is
// reshuffled each epoch from (seed, epoch) identically on every rank, and the ranks' shards are
// disjoint apart from the padding.
//
//   num_samples = drop_last && size % replicas != 0 ? ceil((size - replicas) / replicas)
//                                                   : ceil(size / replicas)
//   total_size  = num_samples * replicas
//   order       = shuffle ? permutation(size, seed + epoch) : 0, 1, ..., size - 1
//   drop_last:    order cut to total_size (the tail is dropped)
//   otherwise:    order padded to total_size by repeating its head (cyclically when the padding
//                 is longer than the order itself)
//   rank r gets   order[r], order[r + replicas], order[r + 2 * replicas], ...
//
// So batch i of every rank together is exactly positions [i * replicas * b, (i + 1) * replicas * b)
// of the epoch's order: the global batch one rank with replicas * b samples per step would take.
//
// The permutation is PyTorch's idea, not its bits: torch.randperm's generator is not reproduced.
// It is a Fisher-Yates shuffle driven by std::mt19937_64 (whose output the standard fixes) with
// unbiased bounded draws of our own (std::uniform_int_distribution and std::shuffle are
// implementation-defined), so the order is the same on every platform and standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace braid {

class DistributedSampler {
 public:
  /// Throws std::invalid_argument when numReplicas < 1 or rank is not in [0, numReplicas).
  DistributedSampler(size_t datasetSize, int numReplicas, int rank, bool shuffle = true,
                     uint64_t seed = 0, bool dropLast = false)
      : datasetSize_(datasetSize),
        numReplicas_(numReplicas),
        rank_(rank),
        shuffle_(shuffle),
        seed_(seed),
        dropLast_(dropLast) {
    if (numReplicas < 1) {
      throw std::invalid_argument("DistributedSampler: numReplicas must be at least 1, got " +
                                  std::to_string(numReplicas));
    }
    if (rank < 0 || rank >= numReplicas) {
      throw std::invalid_argument("DistributedSampler: rank " + std::to_string(rank) +
                                  " is not in [0, numReplicas = " + std::to_string(numReplicas) +
                                  ")");
    }
    const size_t replicas = static_cast<size_t>(numReplicas);
    // PyTorch's ceil((size - replicas) / replicas) is floor(size / replicas) when size is not a
    // multiple of replicas (and 0 when size < replicas).
    numSamples_ = (dropLast && datasetSize % replicas != 0)
                      ? datasetSize / replicas
                      : (datasetSize + replicas - 1) / replicas;
  }

  /// Selects the epoch's order (PyTorch's set_epoch): call it before each epoch, on every rank.
  void setEpoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }

  /// Samples this rank gets per epoch (the same on every rank).
  size_t numSamples() const { return numSamples_; }
  /// Samples all ranks together get per epoch, padding included.
  size_t totalSize() const { return numSamples_ * static_cast<size_t>(numReplicas_); }
  size_t datasetSize() const { return datasetSize_; }
  int numReplicas() const { return numReplicas_; }
  int rank() const { return rank_; }
  bool shuffle() const { return shuffle_; }
  bool dropLast() const { return dropLast_; }

  /// This rank's sample indices for the current epoch, numSamples() of them.
  std::vector<size_t> indices() const {
    const std::vector<size_t> order = epochOrder();
    std::vector<size_t> mine;
    mine.reserve(numSamples_);
    for (size_t position = static_cast<size_t>(rank_); position < order.size();
         position += static_cast<size_t>(numReplicas_)) {
      mine.push_back(order[position]);
    }
    return mine;
  }

  /// The whole epoch's order, cut or padded to totalSize(): what the ranks stride through.
  std::vector<size_t> epochOrder() const {
    std::vector<size_t> order =
        shuffle_ ? permutation(datasetSize_, seed_ + epoch_) : identity(datasetSize_);
    const size_t total = totalSize();
    if (order.size() >= total) {
      order.resize(total);  // drop_last (or nothing to pad)
    } else {
      const size_t original = order.size();  // > 0 here: total is 0 for an empty data set
      for (size_t i = 0; order.size() < total; ++i) order.push_back(order[i % original]);
    }
    return order;
  }

  /// A uniformly random permutation of 0..n-1 that depends only on (n, key).
  static std::vector<size_t> permutation(size_t n, uint64_t key) {
    std::vector<size_t> order = identity(n);
    std::mt19937_64 engine(key);
    for (size_t i = n; i > 1; --i) {
      const size_t j = static_cast<size_t>(uniformBelow(engine, static_cast<uint64_t>(i)));
      std::swap(order[i - 1], order[j]);
    }
    return order;
  }

 private:
  static std::vector<size_t> identity(size_t n) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    return order;
  }

  // A uniform draw from [0, bound) by rejection: values in the incomplete last block of size
  // 2^64 mod bound are redrawn, so every result is equally likely.
  static uint64_t uniformBelow(std::mt19937_64& engine, uint64_t bound) {
    const uint64_t rejectBelow = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const uint64_t draw = engine();
      if (draw >= rejectBelow) return draw % bound;
    }
  }

  size_t datasetSize_;
  int numReplicas_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool dropLast_;
  uint64_t epoch_ = 0;
  size_t numSamples_ = 0;
};

}  // namespace braid
