// Which gradients share a bucket, and in which order the buckets are launched. Pure: no
// communication, unit-tested on its own (tests/gradsync/bucket_assignment_test.cc).
#pragma once

#include <cstddef>
#include <vector>

#include "nccl.h"

namespace braid::gradsync {

struct GradientShape {
  size_t bytes = 0;
  ncclDataType_t dtype = ncclFloat32;
};

/// Groups gradients into buckets, walking them in `readyOrder` (the order backward is expected
/// to produce them: reverse registration order, or the order seen in the first step).
///  - A bucket holds one dtype; each dtype fills its own open bucket.
///  - The first bucket of each dtype is capped at `firstCapBytes`, later ones at `capBytes`.
///  - A gradient that would push its bucket past the cap closes the bucket first, and a bucket
///    closes as soon as it reaches its cap; so a bucket exceeds its cap only when it holds a
///    single gradient larger than the cap (that gradient gets a bucket of its own).
///  - Inside a bucket gradients keep `readyOrder`; buckets are returned in the order they
///    become complete (position of their last gradient in `readyOrder`), which is the order they
///    can be launched without one waiting for another.
/// `readyOrder` must be a permutation of 0..shapes.size()-1.
std::vector<std::vector<int>> assignBuckets(const std::vector<GradientShape>& shapes,
                                            const std::vector<int>& readyOrder,
                                            size_t firstCapBytes, size_t capBytes);

/// n-1, n-2, ..., 0: the order backward produces gradients of parameters registered 0..n-1.
std::vector<int> reverseRegistrationOrder(size_t count);

}  // namespace braid::gradsync
