// Binary and double binary trees (pure math), after NCCL's double binary tree: tree 0 is an
// in-order binary tree over ranks; tree 1 mirrors it (even rank counts) or shifts it by one (odd
// counts), so every rank is a leaf in at least one tree and the two trees share the bandwidth.
#pragma once

#include <span>
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
/// Tree `which` of the double binary tree built over ring positions instead of ranks, seen from
/// the rank at `position` of `order` (position -> rank; empty: rank order): with the ranks of
/// each host one after another, most edges stay within a host.
TreeNode doubleBinaryTreeInOrder(std::span<const int> order, int position, int nranks, int which);
/// Tree `which` of NCCL's layout across hosts, seen from `rank`: a double binary tree over the
/// hosts (hosts[h]: host h's ranks; `host`: rank's host) and a chain within each host, in local
/// order for tree 0 and reversed for tree 1, whose first rank hangs off the parent host. A
/// host's first child host hangs off its chain's first rank, its second child host off the
/// chain's second rank (the first again on a host of one), so no rank has more than two
/// children, every host's link carries at most three edges per tree, and the depth is about
/// 2 log2(hosts) + ranks per host.
TreeNode doubleBinaryTreeOverHosts(std::span<const std::vector<int>> hosts, int host, int rank,
                                   int which);
/// Every rank that is a neighbour of `rank` in the ring (visiting the ranks in `ringOrder`, rank
/// order when empty: patterns/ring.h) or in either tree (sorted, unique).
std::vector<int> neighbourRanks(int rank, int nranks, std::span<const int> ringOrder = {});

}  // namespace braid::patterns
