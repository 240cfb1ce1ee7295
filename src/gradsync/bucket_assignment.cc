#include "gradsync/bucket_assignment.h"

#include <algorithm>
#include <map>

namespace braid::gradsync {

namespace {

struct OpenBucket {
  std::vector<int> gradients;
  size_t bytes = 0;
  bool closedOne = false;  // a bucket of this dtype was closed already: later ones use capBytes
};

struct Placed {
  std::vector<int> gradients;
  size_t completedAt = 0;  // position in readyOrder of the bucket's last gradient
};

}  // namespace

std::vector<std::vector<int>> assignBuckets(const std::vector<GradientShape>& shapes,
                                            const std::vector<int>& readyOrder,
                                            size_t firstCapBytes, size_t capBytes) {
  std::map<int, OpenBucket> open;  // by dtype
  std::vector<Placed> placed;
  std::vector<size_t> position(shapes.size(), 0);
  for (size_t p = 0; p < readyOrder.size(); p++) position[readyOrder[p]] = p;

  auto close = [&](OpenBucket& bucket) {
    if (bucket.gradients.empty()) return;
    size_t last = position[bucket.gradients.back()];
    placed.push_back({std::move(bucket.gradients), last});
    bucket.gradients.clear();
    bucket.bytes = 0;
    bucket.closedOne = true;
  };

  for (int g : readyOrder) {
    const GradientShape& shape = shapes[g];
    OpenBucket& bucket = open[static_cast<int>(shape.dtype)];
    size_t cap = bucket.closedOne ? capBytes : firstCapBytes;
    if (!bucket.gradients.empty() && bucket.bytes + shape.bytes > cap) {
      close(bucket);
      cap = capBytes;
    }
    bucket.gradients.push_back(g);
    bucket.bytes += shape.bytes;
    if (bucket.bytes >= cap) close(bucket);
  }
  for (auto& [dtype, bucket] : open) close(bucket);

  std::stable_sort(placed.begin(), placed.end(),
                   [](const Placed& a, const Placed& b) { return a.completedAt < b.completedAt; });
  std::vector<std::vector<int>> buckets;
  buckets.reserve(placed.size());
  for (Placed& p : placed) buckets.push_back(std::move(p.gradients));
  return buckets;
}

std::vector<int> reverseRegistrationOrder(size_t count) {
  std::vector<int> order(count);
  for (size_t i = 0; i < count; i++) order[i] = static_cast<int>(count - 1 - i);
  return order;
}

}  // namespace braid::gradsync
