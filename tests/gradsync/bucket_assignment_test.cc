// Bucket assignment (src/gradsync/bucket_assignment.h) against layouts worked out by hand.
#include <gtest/gtest.h>

#include <vector>

#include "gradsync/bucket_assignment.h"

namespace braid::gradsync {
namespace {

using Layout = std::vector<std::vector<int>>;

std::vector<GradientShape> floats(std::vector<size_t> bytes) {
  std::vector<GradientShape> shapes;
  for (size_t b : bytes) shapes.push_back({b, ncclFloat32});
  return shapes;
}

TEST(BucketAssignment, ReverseOrderFirstBucketSmaller) {
  // Six 400-byte gradients, first cap 800, cap 1200: reverse order 5,4 | 3,2,1 | 0.
  auto layout =
      assignBuckets(floats({400, 400, 400, 400, 400, 400}), reverseRegistrationOrder(6), 800, 1200);
  EXPECT_EQ(layout, (Layout{{5, 4}, {3, 2, 1}, {0}}));
}

TEST(BucketAssignment, DdpDefaultsOneMiBThen25MiB) {
  // 100 gradients of 512 KiB: the first bucket takes 2 (1 MiB), then 50 per 25 MiB bucket.
  std::vector<size_t> bytes(100, size_t{512} << 10);
  auto layout = assignBuckets(floats(bytes), reverseRegistrationOrder(100), size_t{1} << 20,
                              size_t{25} << 20);
  ASSERT_EQ(layout.size(), 3u);
  EXPECT_EQ(layout[0], (std::vector<int>{99, 98}));
  EXPECT_EQ(layout[1].size(), 50u);
  EXPECT_EQ(layout[1].front(), 97);
  EXPECT_EQ(layout[2].size(), 48u);
  EXPECT_EQ(layout[2].back(), 0);
}

TEST(BucketAssignment, GradientLargerThanCapGetsItsOwnBucket) {
  // Registration order 0..4; reverse: 4 (100), 3 (5000 > cap), 2 (100), 1 (100), 0 (6000).
  auto layout =
      assignBuckets(floats({6000, 100, 100, 5000, 100}), reverseRegistrationOrder(5), 1000, 1000);
  EXPECT_EQ(layout, (Layout{{4}, {3}, {2, 1}, {0}}));
}

TEST(BucketAssignment, BucketsNeverExceedTheCapWithSeveralGradients) {
  // 300 + 300 + 300 = 900 <= 1000, the next 300 would make 1200: it starts a new bucket.
  auto layout = assignBuckets(floats({300, 300, 300, 300, 300}), {0, 1, 2, 3, 4}, 1000, 1000);
  EXPECT_EQ(layout, (Layout{{0, 1, 2}, {3, 4}}));
}

TEST(BucketAssignment, BucketClosesWhenItReachesTheCapExactly) {
  auto layout = assignBuckets(floats({500, 500, 10}), {0, 1, 2}, 1000, 1000);
  EXPECT_EQ(layout, (Layout{{0, 1}, {2}}));
}

TEST(BucketAssignment, OneDtypePerBucketOrderedByCompletion) {
  // fp32 and fp64 interleaved: each dtype fills its own bucket. The fp64 bucket {1, 3} is
  // complete at position 3, the fp32 bucket {0, 2, 4} at position 4: fp64 goes first.
  std::vector<GradientShape> shapes = {
      {8, ncclFloat32}, {8, ncclFloat64}, {8, ncclFloat32}, {8, ncclFloat64}, {8, ncclFloat32}};
  auto layout = assignBuckets(shapes, {0, 1, 2, 3, 4}, 1 << 20, 1 << 20);
  EXPECT_EQ(layout, (Layout{{1, 3}, {0, 2, 4}}));
}

TEST(BucketAssignment, FirstCapAppliesPerDtype) {
  std::vector<GradientShape> shapes = {
      {8, ncclFloat32}, {8, ncclFloat32}, {8, ncclFloat16}, {8, ncclFloat16}, {8, ncclFloat16}};
  // First caps of 8 bytes: each dtype's first bucket holds one gradient, then cap 100. The
  // fp32 bucket {1} closes last but is complete at position 1, so it is launched second.
  auto layout = assignBuckets(shapes, {0, 1, 2, 3, 4}, 8, 100);
  EXPECT_EQ(layout, (Layout{{0}, {1}, {2}, {3, 4}}));
}

TEST(BucketAssignment, FollowsAGivenReadyOrder) {
  auto layout = assignBuckets(floats({100, 100, 100, 100}), {2, 0, 3, 1}, 200, 200);
  EXPECT_EQ(layout, (Layout{{2, 0}, {3, 1}}));
}

TEST(BucketAssignment, EmptyGradientsAndEmptyModel) {
  EXPECT_TRUE(assignBuckets({}, {}, 100, 100).empty());
  // Zero-byte gradients join the open bucket; a cap of 0 gives every gradient its own bucket.
  EXPECT_EQ(assignBuckets(floats({0, 40, 0}), {0, 1, 2}, 100, 100), (Layout{{0, 1, 2}}));
  EXPECT_EQ(assignBuckets(floats({0, 40, 0}), {0, 1, 2}, 0, 0), (Layout{{0}, {1}, {2}}));
}

TEST(BucketAssignment, EveryGradientExactlyOnce) {
  std::vector<GradientShape> shapes;
  for (int i = 0; i < 97; i++)
    shapes.push_back({static_cast<size_t>((i * 37) % 1000), i % 3 ? ncclFloat32 : ncclBfloat16});
  auto layout = assignBuckets(shapes, reverseRegistrationOrder(97), 512, 2048);
  std::vector<int> seen(97, 0);
  for (const auto& bucket : layout) {
    size_t bytes = 0;
    for (int g : bucket) {
      seen[g]++;
      bytes += shapes[g].bytes;
      EXPECT_EQ(shapes[g].dtype, shapes[bucket.front()].dtype);
    }
    if (bucket.size() > 1) {
      EXPECT_LE(bytes, 2048u);
    }
  }
  for (int i = 0; i < 97; i++) EXPECT_EQ(seen[i], 1) << "gradient " << i;
}

}  // namespace
}  // namespace braid::gradsync
