// The binary and double binary trees (patterns/tree.h) for every rank count from 1 to 130:
// well-formed trees (one root, parent/child agreement, no cycles, everyone reachable, at most two
// children, logarithmic depth), the double tree's sharing of interior work, and the neighbour
// lists that decide which connections a communicator makes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "patterns/ring.h"
#include "patterns/tree.h"
#include "unit/unit_helpers.h"

namespace braid::patterns {
namespace {

constexpr int kTreeMaxRanks = 130;

std::vector<TreeNode> treeOf(int nranks, int which) {
  std::vector<TreeNode> nodes;
  for (int r = 0; r < nranks; r++) nodes.push_back(doubleBinaryTree(r, nranks, which));
  return nodes;
}

void expectWellFormed(const std::vector<TreeNode>& nodes, int which) {
  const int n = static_cast<int>(nodes.size());
  SCOPED_TRACE("nranks " + std::to_string(n) + " tree " + std::to_string(which));
  int roots = 0;
  int root = -1;
  for (int r = 0; r < n; r++) {
    const TreeNode& node = nodes[r];
    if (node.parent < 0) {
      roots++;
      root = r;
    } else {
      ASSERT_LT(node.parent, n) << "rank " << r;
      ASSERT_NE(node.parent, r) << "rank " << r << " is its own parent";
      const TreeNode& p = nodes[node.parent];
      EXPECT_TRUE(p.children[0] == r || p.children[1] == r)
          << "rank " << r << " names parent " << node.parent << " which does not list it";
    }
    for (int c : node.children) {
      if (c < 0) continue;
      ASSERT_LT(c, n) << "rank " << r;
      EXPECT_EQ(nodes[c].parent, r) << "rank " << r << " lists child " << c;
    }
    // Children are filled from the first slot, and never twice the same.
    if (node.children[0] < 0) {
      EXPECT_LT(node.children[1], 0) << "rank " << r;
    } else {
      EXPECT_NE(node.children[0], node.children[1]) << "rank " << r;
    }
  }
  ASSERT_EQ(roots, 1);
  if (n > 1) {
    EXPECT_EQ(nodes[root].nchildren(), 1) << "the root passes everything to one child";
  }
  // Every rank reaches the root within ceil(log2 n) steps: no cycles, one component, and the
  // logarithmic latency the tree exists for.
  const int maxDepth = unit_test::ceilLog2(n);
  for (int r = 0; r < n; r++) {
    int at = r, depth = 0;
    while (nodes[at].parent >= 0 && depth <= n) at = nodes[at].parent, depth++;
    EXPECT_EQ(at, root) << "rank " << r << " does not reach the root (cycle?)";
    EXPECT_LE(depth, maxDepth) << "rank " << r;
  }
}

TEST(DoubleBinaryTree, BothTreesAreWellFormedFor1To130Ranks) {
  for (int n = 1; n <= kTreeMaxRanks; n++)
    for (int which = 0; which < 2; which++) expectWellFormed(treeOf(n, which), which);
}

TEST(DoubleBinaryTree, TreeZeroIsTheBinaryTreeRootedAtZero) {
  for (int n = 1; n <= kTreeMaxRanks; n++) {
    for (int r = 0; r < n; r++) {
      TreeNode a = binaryTree(r, n), b = doubleBinaryTree(r, n, 0);
      EXPECT_EQ(a.parent, b.parent);
      EXPECT_EQ(a.children[0], b.children[0]);
      EXPECT_EQ(a.children[1], b.children[1]);
    }
    EXPECT_LT(binaryTree(0, n).parent, 0);
  }
}

// What the mirror (even counts) and shift (odd counts) buy: interior ranks of one tree are
// leaves of the other, so no rank forwards the data of both halves. With an odd count exactly
// one rank, rank 0, is interior in both (root of tree 0 and an inner node of tree 1).
TEST(DoubleBinaryTree, InteriorWorkIsShared) {
  for (int n = 3; n <= kTreeMaxRanks; n++) {
    std::vector<TreeNode> t0 = treeOf(n, 0), t1 = treeOf(n, 1);
    std::vector<int> interiorInBoth;
    for (int r = 0; r < n; r++)
      if (t0[r].nchildren() > 0 && t1[r].nchildren() > 0) interiorInBoth.push_back(r);
    if (n % 2 == 0) {
      EXPECT_TRUE(interiorInBoth.empty()) << "nranks " << n << ": rank " << interiorInBoth[0];
    } else {
      EXPECT_EQ(interiorInBoth, std::vector<int>{0}) << "nranks " << n;
    }
    EXPECT_LT(t0[0].parent, 0) << "nranks " << n << ": rank 0 roots tree 0";
    // The two roots differ, so the two halves enter the trees at different ranks.
    int root1 = -1;
    for (int r = 0; r < n; r++)
      if (t1[r].parent < 0) root1 = r;
    EXPECT_NE(root1, 0) << "nranks " << n;
    EXPECT_EQ(root1, n % 2 == 0 ? n - 1 : 1) << "nranks " << n;
  }
}

TEST(DoubleBinaryTree, TwoRanksAreOneEdgeEachWay) {
  EXPECT_EQ(doubleBinaryTree(0, 2, 0).children[0], 1);
  EXPECT_EQ(doubleBinaryTree(1, 2, 0).parent, 0);
  EXPECT_EQ(doubleBinaryTree(1, 2, 1).children[0], 0);
  EXPECT_EQ(doubleBinaryTree(0, 2, 1).parent, 1);
}

TEST(DoubleBinaryTree, OneRankIsAloneInBothTrees) {
  for (int which = 0; which < 2; which++) {
    TreeNode node = doubleBinaryTree(0, 1, which);
    EXPECT_LT(node.parent, 0);
    EXPECT_EQ(node.nchildren(), 0);
  }
}

// A communicator connects exactly these ranks; both sides must agree, or one side would wait
// for a connection the other never makes.
TEST(NeighbourRanks, CoverRingAndTreesAndAreSymmetric) {
  for (int n = 1; n <= kTreeMaxRanks; n++) {
    std::vector<std::vector<int>> all;
    for (int r = 0; r < n; r++) all.push_back(neighbourRanks(r, n));
    for (int r = 0; r < n; r++) {
      const std::vector<int>& mine = all[r];
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      EXPECT_EQ(std::adjacent_find(mine.begin(), mine.end()), mine.end()) << "duplicates";
      EXPECT_EQ(std::count(mine.begin(), mine.end(), r), 0) << "rank " << r << " lists itself";
      // Exactly the ring neighbours and the tree parents and children, nothing else.
      std::vector<int> expected;
      Ring ring{r, n};
      if (n > 1) expected = {ring.next(), ring.prev()};
      for (int t = 0; t < 2; t++) {
        TreeNode node = doubleBinaryTree(r, n, t);
        for (int peer : {node.parent, node.children[0], node.children[1]})
          if (peer >= 0 && peer != r) expected.push_back(peer);
      }
      std::sort(expected.begin(), expected.end());
      expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
      EXPECT_EQ(mine, expected) << "nranks " << n << " rank " << r;
      for (int peer : mine) {
        const std::vector<int>& theirs = all[peer];
        EXPECT_TRUE(std::binary_search(theirs.begin(), theirs.end(), r))
            << "nranks " << n << ": " << r << " lists " << peer << " but not the reverse";
      }
    }
    if (n == 1) {
      EXPECT_TRUE(all[0].empty());
    }
  }
}

}  // namespace
}  // namespace braid::patterns
