// DistributedSampler against PyTorch's algorithm: a line-by-line transcription of
// torch.utils.data.DistributedSampler.__init__/__iter__ (signed ceil, list padding, slicing) is
// the reference, plus hand-derived PyTorch outputs for unshuffled orders.
#include "braid/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace {

using braid::DistributedSampler;
using Indices = std::vector<size_t>;

// PyTorch's __iter__ after the order is made, written as the Python reads.
Indices pytorchShard(Indices indices, long replicas, long rank, bool dropLast) {
  const long size = static_cast<long>(indices.size());
  long numSamples;
  if (dropLast && size % replicas != 0) {
    numSamples = static_cast<long>(
        std::ceil(static_cast<double>(size - replicas) / static_cast<double>(replicas)));
  } else {
    numSamples = static_cast<long>(std::ceil(static_cast<double>(size) / replicas));
  }
  const long totalSize = numSamples * replicas;
  if (!dropLast) {
    const long paddingSize = totalSize - size;
    if (paddingSize <= size) {
      Indices head(indices.begin(), indices.begin() + paddingSize);
      indices.insert(indices.end(), head.begin(), head.end());
    } else {
      // indices * ceil(padding / len), then [:padding]
      const long copies = static_cast<long>(std::ceil(static_cast<double>(paddingSize) / size));
      Indices repeated;
      for (long c = 0; c < copies; ++c)
        repeated.insert(repeated.end(), indices.begin(), indices.end());
      indices.insert(indices.end(), repeated.begin(), repeated.begin() + paddingSize);
    }
  } else {
    indices.resize(static_cast<size_t>(std::max(totalSize, 0L)));
  }
  EXPECT_EQ(static_cast<long>(indices.size()), totalSize);
  Indices shard;
  for (long i = rank; i < totalSize; i += replicas) shard.push_back(indices[i]);
  EXPECT_EQ(static_cast<long>(shard.size()), numSamples);
  return shard;
}

Indices iota(size_t n) {
  Indices v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

TEST(Sampler, UnshuffledMatchesPyTorchOutputs) {
  // Worked out from PyTorch's code: 10 samples on 3 ranks pad with the head (0, 1).
  const std::vector<Indices> padded = {{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}};
  const std::vector<Indices> dropped = {{0, 3, 6}, {1, 4, 7}, {2, 5, 8}};
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(DistributedSampler(10, 3, r, false, 0, false).indices(), padded[r]) << r;
    EXPECT_EQ(DistributedSampler(10, 3, r, false, 0, true).indices(), dropped[r]) << r;
  }
  // 2 samples on 5 ranks: the padding (3) is longer than the data, so it repeats cyclically.
  const std::vector<Indices> tiny = {{0}, {1}, {0}, {1}, {0}};
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(DistributedSampler(2, 5, r, false).indices(), tiny[r]) << r;
    EXPECT_TRUE(DistributedSampler(2, 5, r, false, 0, true).indices().empty()) << r;
  }
}

TEST(Sampler, MatchesReferenceForOddSizesAndRankCounts) {
  for (size_t size : {0, 1, 2, 3, 4, 5, 7, 10, 11, 13, 64, 97, 1797}) {
    for (int replicas : {1, 2, 3, 4, 5, 7}) {
      for (bool dropLast : {false, true}) {
        for (bool shuffle : {false, true}) {
          for (uint64_t epoch : {0, 1, 5}) {
            Indices order =
                shuffle ? DistributedSampler::permutation(size, 42 + epoch) : iota(size);
            size_t expectedSamples = 0;
            std::set<size_t> covered;
            std::vector<size_t> hits(size, 0);
            for (int r = 0; r < replicas; ++r) {
              DistributedSampler sampler(size, replicas, r, shuffle, 42, dropLast);
              sampler.setEpoch(epoch);
              const Indices got = sampler.indices();
              const Indices want = pytorchShard(order, replicas, r, dropLast);
              ASSERT_EQ(got, want)
                  << "size " << size << " replicas " << replicas << " rank " << r << " drop_last "
                  << dropLast << " shuffle " << shuffle << " epoch " << epoch;
              if (r == 0) expectedSamples = got.size();
              EXPECT_EQ(got.size(), expectedSamples) << "every rank gets as many samples";
              EXPECT_EQ(got.size(), sampler.numSamples());
              for (size_t i : got) {
                ASSERT_LT(i, size);
                covered.insert(i);
                ++hits[i];
              }
            }
            const size_t total = expectedSamples * replicas;
            if (!dropLast) {
              EXPECT_EQ(covered.size(), size) << "the ranks' union covers the data set";
              EXPECT_GE(total, size);
              EXPECT_LT(total, size + replicas);
            } else {
              EXPECT_EQ(covered.size(), total) << "drop_last: no sample twice";
              EXPECT_LE(total, size);
              EXPECT_LT(size - total, static_cast<size_t>(replicas));
            }
            // Padding repeats samples at most once more each, unless the data is shorter than
            // the padding.
            if (!dropLast && size >= static_cast<size_t>(replicas)) {
              for (size_t h : hits) EXPECT_LE(h, 2u);
            }
          }
        }
      }
    }
  }
}

TEST(Sampler, ShuffleIsAPermutationFixedBySeedAndEpoch) {
  for (size_t n : {0, 1, 2, 3, 31, 1000}) {
    Indices p = DistributedSampler::permutation(n, 7);
    Indices sorted = p;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(n)) << n;
    EXPECT_EQ(DistributedSampler::permutation(n, 7), p) << "same key, same order";
  }
  // Every rank computes the same order; epochs and seeds change it.
  DistributedSampler a(1000, 4, 0, true, 3), b(1000, 4, 3, true, 3), c(1000, 4, 0, true, 4);
  EXPECT_EQ(a.epochOrder(), b.epochOrder());
  const Indices epoch0 = a.epochOrder();
  a.setEpoch(1);
  EXPECT_NE(a.epochOrder(), epoch0);
  EXPECT_NE(c.epochOrder(), epoch0);
  // seed + epoch is the key, as in PyTorch: (seed 3, epoch 1) == (seed 4, epoch 0).
  EXPECT_EQ(a.epochOrder(), c.epochOrder());
  // Pinned values: the order must not change across platforms or standard libraries.
  const Indices pinned = DistributedSampler::permutation(10, 0);
  EXPECT_EQ(pinned, (Indices{7, 2, 0, 8, 3, 9, 6, 1, 5, 4}));
}

TEST(Sampler, ShuffleIsRoughlyUniform) {
  // Position of element 0 over many keys: each of 5 positions about 1/5 of the time.
  std::vector<int> counts(5, 0);
  const int draws = 5000;
  for (int key = 0; key < draws; ++key) {
    Indices p = DistributedSampler::permutation(5, key);
    ++counts[std::find(p.begin(), p.end(), 0) - p.begin()];
  }
  for (int c : counts) {
    EXPECT_GT(c, draws / 5 - 150);
    EXPECT_LT(c, draws / 5 + 150);
  }
}

TEST(Sampler, BadArgumentsAreNamed) {
  try {
    DistributedSampler(10, 0, 0);
    FAIL() << "numReplicas 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("numReplicas"), std::string::npos) << e.what();
  }
  for (int rank : {-1, 3}) {
    try {
      DistributedSampler(10, 3, rank);
      FAIL() << "rank " << rank << " accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(rank)), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
