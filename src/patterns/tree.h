// Binary and double binary trees (pure math), after NCCL's double binary tree: tree 0 is an
// in-order binary tree over ranks; tree 1 mirrors it (even rank counts) or shifts it by one (odd
// counts), so every rank is a leaf in at least one tree and the two trees share the bandwidth.
#pragma once

#include <vector>

namespace braid::patterns {

struct TreeNode {
  int parent = -1;  ///< -1 for the root
  int children[2] = {-1, -1};
  int nchildren() const { return (children[0] >= 0) + (children[1] >= 0); }
};

/// Node of `rank` in the in-order binary tree over 0..nranks-1 rooted at 0.
TreeNode binaryTree(int rank, int nranks);
/// Node of `rank` in tree `which` (0 or 1) of the double binary tree.
TreeNode doubleBinaryTree(int rank, int nranks, int which);
/// Every rank that is a neighbour of `rank` in the ring or in either tree (sorted, unique).
std::vector<int> neighbourRanks(int rank, int nranks);

}  // namespace braid::patterns
