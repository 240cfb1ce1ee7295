#include "patterns/ring.h"

#include <algorithm>
#include <unordered_map>

namespace braid::patterns {

std::vector<int> hostContiguousOrder(std::span<const uint64_t> hostOf) {
  const int n = static_cast<int>(hostOf.size());
  // Each host's index in the order of its lowest rank; a stable sort keeps rank order within.
  std::unordered_map<uint64_t, int> hostIndex;
  std::vector<int> indexOf(n);
  for (int r = 0; r < n; r++)
    indexOf[r] = hostIndex.try_emplace(hostOf[r], static_cast<int>(hostIndex.size())).first->second;
  std::vector<int> order(n);
  for (int r = 0; r < n; r++) order[r] = r;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return indexOf[a] < indexOf[b]; });
  for (int p = 0; p < n; p++)
    if (order[p] != p) return order;
  return {};
}

std::vector<int> reversedWithinHosts(std::span<const std::vector<int>> ranksOf) {
  if (ranksOf.size() < 2) return {};
  std::vector<int> order;
  for (const std::vector<int>& local : ranksOf) {
    if (local.size() < 2) return {};
    order.insert(order.end(), local.rbegin(), local.rend());
  }
  return order;
}

}  // namespace braid::patterns
