#include "patterns/tree.h"

#include <algorithm>

#include "patterns/ring.h"

namespace braid::patterns {

// In-order binary tree: a rank's level is its lowest set bit. The parent of r (bit b) is the
// nearest rank at level 2b (r ^ b | 2b), or r ^ b when that is out of range; its children are
// r - b/2 and r + b/2 (the latter shrinking until it fits). Rank 0 is the root with one child.
TreeNode binaryTree(int rank, int nranks) {
  TreeNode node;
  if (nranks <= 1) return node;
  int bit = 1;
  while (bit < nranks && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    node.children[0] = bit >> 1;
    return node;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  node.parent = up;
  int low = bit >> 1;
  if (low > 0) {
    node.children[0] = rank - low;
    int right = -1;
    for (int l = low; l > 0; l >>= 1) {
      if (rank + l < nranks) {
        right = rank + l;
        break;
      }
    }
    node.children[1] = right;
  }
  return node;
}

TreeNode doubleBinaryTree(int rank, int nranks, int which) {
  if (which == 0) return binaryTree(rank, nranks);
  auto map = [nranks](int r, bool inverse) {
    if (r < 0) return -1;
    if (nranks % 2 == 0) return nranks - 1 - r;                     // mirror
    return inverse ? (r + 1) % nranks : (r - 1 + nranks) % nranks;  // shift
  };
  TreeNode t = binaryTree(map(rank, false), nranks);
  TreeNode out;
  out.parent = map(t.parent, true);
  out.children[0] = map(t.children[0], true);
  out.children[1] = map(t.children[1], true);
  return out;
}

TreeNode doubleBinaryTreeInOrder(std::span<const int> order, int position, int nranks, int which) {
  TreeNode node = doubleBinaryTree(position, nranks, which);
  if (order.empty()) return node;
  auto rankAt = [&](int p) { return p < 0 ? -1 : order[p]; };
  node.parent = rankAt(node.parent);
  for (int& child : node.children) child = rankAt(child);
  return node;
}

TreeNode doubleBinaryTreeOverHosts(std::span<const std::vector<int>> hosts, int host, int rank,
                                   int which) {
  const int h = static_cast<int>(hosts.size());
  // Host g's chain, position p -> rank.
  auto chainAt = [&](int g, int p) {
    const std::vector<int>& local = hosts[g];
    const int l = static_cast<int>(local.size());
    return local[which == 0 ? p : l - 1 - p];
  };
  // Where on host g's chain its k-th child host hangs.
  auto attachAt = [&](int g, int k) { return std::min(k, static_cast<int>(hosts[g].size()) - 1); };
  const std::vector<int>& local = hosts[host];
  const int l = static_cast<int>(local.size());
  const int li = static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
  const int p = which == 0 ? li : l - 1 - li;
  const TreeNode across = doubleBinaryTree(host, h, which);
  TreeNode node;
  if (p > 0) {
    node.parent = chainAt(host, p - 1);
  } else if (across.parent >= 0) {
    const TreeNode above = doubleBinaryTree(across.parent, h, which);
    const int k = above.children[0] == host ? 0 : 1;
    node.parent = chainAt(across.parent, attachAt(across.parent, k));
  }
  int children = 0;
  if (p + 1 < l) node.children[children++] = chainAt(host, p + 1);
  for (int k = 0; k < 2; k++)
    if (across.children[k] >= 0 && attachAt(host, k) == p)
      node.children[children++] = chainAt(across.children[k], 0);
  return node;
}

std::vector<int> neighbourRanks(int rank, int nranks, std::span<const int> ringOrder) {
  std::vector<int> out;
  if (nranks <= 1) return out;
  const int position = ringOrder.empty()
                           ? rank
                           : static_cast<int>(std::find(ringOrder.begin(), ringOrder.end(), rank) -
                                              ringOrder.begin());
  Ring ring = Ring::atPosition(position, ringOrder, nranks);
  out.push_back(ring.next());
  out.push_back(ring.prev());
  for (int t = 0; t < 2; t++) {
    TreeNode n = doubleBinaryTreeInOrder(ringOrder, position, nranks, t);
    for (int r : {n.parent, n.children[0], n.children[1]})
      if (r >= 0) out.push_back(r);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  out.erase(std::remove(out.begin(), out.end(), rank), out.end());
  return out;
}

}  // namespace braid::patterns
