// The double binary tree across hosts (patterns::doubleBinaryTreeOverHosts): for 1-17 hosts of
// 1-5 ranks, numbered host by host and interleaved, and hosts of unequal sizes, both trees are
// well formed (one root, parent and children agree, everyone reaches the root, at most two
// children), each host's ranks form a chain, the hosts form the double binary tree over hosts,
// every host's link carries at most three edges per tree, and the depth stays within
// 2 ceil(log2 hosts) + ranks per host - 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "patterns/tree.h"
#include "unit/unit_helpers.h"

namespace braid::patterns {
namespace {

// Host h's ranks for `sizes` hosts: numbered host by host, or round robin over the hosts.
std::vector<std::vector<int>> placeRanks(const std::vector<int>& sizes, bool interleaved) {
  std::vector<std::vector<int>> hosts(sizes.size());
  int rank = 0;
  if (!interleaved) {
    for (size_t h = 0; h < sizes.size(); h++)
      for (int i = 0; i < sizes[h]; i++) hosts[h].push_back(rank++);
    return hosts;
  }
  int total = 0;
  for (int size : sizes) total += size;
  for (int i = 0; rank < total; i++)
    for (size_t h = 0; h < sizes.size(); h++)
      if (i < sizes[h]) hosts[h].push_back(rank++);
  return hosts;
}

void expectHostTree(const std::vector<std::vector<int>>& hosts, int which) {
  int n = 0;
  for (const auto& on : hosts) n += static_cast<int>(on.size());
  std::vector<int> hostOf(n);
  for (size_t h = 0; h < hosts.size(); h++)
    for (int r : hosts[h]) hostOf[r] = static_cast<int>(h);
  std::vector<TreeNode> nodes(n);
  for (int r = 0; r < n; r++) nodes[r] = doubleBinaryTreeOverHosts(hosts, hostOf[r], r, which);
  const int h = static_cast<int>(hosts.size());
  int maxLocal = 0;
  for (const auto& on : hosts) maxLocal = std::max(maxLocal, static_cast<int>(on.size()));
  int roots = 0, root = -1;
  std::vector<int> crossing(h, 0), within(h, 0);
  for (int r = 0; r < n; r++) {
    const TreeNode& node = nodes[r];
    if (node.parent < 0) {
      roots++, root = r;
    } else {
      ASSERT_GE(node.parent, 0);
      ASSERT_LT(node.parent, n);
      const TreeNode& p = nodes[node.parent];
      EXPECT_TRUE(p.children[0] == r || p.children[1] == r)
          << "rank " << r << " names parent " << node.parent << " which does not list it";
      if (hostOf[node.parent] == hostOf[r]) {
        within[hostOf[r]]++;
      } else {
        crossing[hostOf[r]]++, crossing[hostOf[node.parent]]++;
        // A host's top joins the parent host of the tree over hosts.
        EXPECT_EQ(hostOf[node.parent], doubleBinaryTree(hostOf[r], h, which).parent)
            << "rank " << r;
      }
    }
    for (int c : node.children) {
      if (c >= 0) {
        EXPECT_EQ(nodes[c].parent, r) << "rank " << r << " lists child " << c;
      }
    }
    if (node.children[0] < 0) {
      EXPECT_LT(node.children[1], 0);
    }
  }
  ASSERT_EQ(roots, 1);
  EXPECT_LT(doubleBinaryTree(hostOf[root], h, which).parent, 0)
      << "the root's host is not the root";
  for (int g = 0; g < h; g++) {
    // A chain: l-1 edges within the host (with one top, the rest reached through them).
    EXPECT_EQ(within[g], static_cast<int>(hosts[g].size()) - 1) << "host " << g;
    EXPECT_LE(crossing[g], 3) << "host " << g;
  }
  const int maxDepth = 2 * unit_test::ceilLog2(h) + maxLocal - 1;
  for (int r = 0; r < n; r++) {
    int at = r, depth = 0;
    while (nodes[at].parent >= 0 && depth <= n) at = nodes[at].parent, depth++;
    EXPECT_EQ(at, root) << "rank " << r << " does not reach the root (cycle?)";
    EXPECT_LE(depth, maxDepth) << "rank " << r;
  }
}

TEST(DoubleBinaryTreeOverHosts, WellFormedForEqualHosts) {
  for (int h = 1; h <= 17; h++)
    for (int l = 1; l <= 5; l++)
      for (bool interleaved : {false, true})
        for (int which = 0; which < 2; which++) {
          SCOPED_TRACE(std::to_string(h) + " hosts of " + std::to_string(l) +
                       (interleaved ? " interleaved" : " in blocks") + ", tree " +
                       std::to_string(which));
          expectHostTree(placeRanks(std::vector<int>(h, l), interleaved), which);
        }
}

TEST(DoubleBinaryTreeOverHosts, WellFormedForUnequalHosts) {
  for (const std::vector<int>& sizes :
       {std::vector<int>{3, 1, 2}, {1, 4}, {2, 2, 2, 1, 5}, {5, 1, 1, 1, 1, 1, 1}})
    for (bool interleaved : {false, true})
      for (int which = 0; which < 2; which++) {
        SCOPED_TRACE(std::to_string(sizes.size()) + " hosts, tree " + std::to_string(which));
        expectHostTree(placeRanks(sizes, interleaved), which);
      }
}

// The two trees start their chains at opposite ends: a host's interior ranks of one tree are
// leaves or near-leaves of the other, as the double tree over ranks shares out interior work.
TEST(DoubleBinaryTreeOverHosts, TreesEnterEachHostAtOppositeEnds) {
  const std::vector<std::vector<int>> hosts = placeRanks(std::vector<int>(4, 3), false);
  for (int g = 0; g < 4; g++) {
    const std::vector<int>& on = hosts[g];
    EXPECT_EQ(doubleBinaryTreeOverHosts(hosts, g, on.back(), 0).children[0], -1)
        << "host " << g << ": the last rank ends tree 0's chain";
    EXPECT_EQ(doubleBinaryTreeOverHosts(hosts, g, on.front(), 1).children[0], -1)
        << "host " << g << ": the first rank ends tree 1's chain";
  }
}

}  // namespace
}  // namespace braid::patterns
