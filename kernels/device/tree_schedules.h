// All-reduce schedules beside the ring, over the same primitives:
// - Tree: reduce up a binary tree to its root, then broadcast down it, chunk by chunk (NCCL's
//   tree: log2(n) hops each way). Even channels use the tree of ranks in order, odd channels its
//   mirror, so that leaves of one tree are inner nodes of the other (NCCL's double binary tree).
// - One-shot: every rank sends its input to every other rank and sums all n inputs in rank
//   order: one hop, for small messages (with LL). The rank order makes every rank's result the
//   same to the bit.
#pragma once

#include <cstddef>

#include "kernels/device/ring_schedules.h"

namespace braid::kernels::device {

/// A node of the binary tree of `n` ranks used by `channel`: parent and children, -1 for none.
struct TreeNode {
  int parent = -1;
  int child[2] = {-1, -1};
};
BRAID_DEVICE_FN TreeNode treeNode(int rank, int n, int channel) {
  const bool mirror = channel % 2 == 1;
  const int i = mirror ? n - 1 - rank : rank;
  auto rankOf = [&](int index) { return mirror ? n - 1 - index : index; };
  TreeNode node;
  if (i > 0) node.parent = rankOf((i - 1) / 2);
  for (int k = 0; k < 2; ++k)
    if (2 * i + 1 + k < n) node.child[k] = rankOf(2 * i + 1 + k);
  return node;
}

template <int D, class Op>
BRAID_DEVICE_FN void treeAllReduce(const ChannelContext& c) {
  const auto [a, n, r, size, in, out, channel] = Frame<D>(c);
  if (channel.size() == 0) return;
  const TreeNode node = treeNode(r, n, c.channel);
  const bool root = node.parent < 0;
  const int children = (node.child[0] >= 0) + (node.child[1] >= 0);
  Link up{}, down[2]{}, fromChild[2]{}, fromParent{};
  if (!root) {
    up = sendLink(c, node.parent);
    fromParent = recvLink(c, node.parent);
  }
  for (int k = 0; k < children; ++k) {
    fromChild[k] = recvLink(c, node.child[k]);
    down[k] = sendLink(c, node.child[k]);
  }
  const DeviceFifo* any = !root ? up.fifo : children > 0 ? down[0].fifo : nullptr;
  const std::size_t chunk = any == nullptr ? channel.size() : chunkCapacity(c, any) / size;
  for (std::size_t offset = 0; offset < channel.size(); offset += chunk) {
    const Range p = pieceOf(channel, 0, 1, offset, chunk);
    const std::size_t bytes = p.size() * size;
    char* mine = out + p.begin * size;
    // Up: this rank's input, then each child's partial result; the root's last step divides.
    // A rank with a parent builds its partial straight into the parent's slot.
    Src acc = nullptr;
    const Src local = in + p.begin * size;
    const Dst upSlot = root ? nullptr : sendBegin(c, up);
    for (int k = 0; k <= children; ++k) {
      const bool last = k == children;
      const Dst target = last && !root ? upSlot : mine;
      Src got = k > 0 ? recvBegin(c, fromChild[k - 1], bytes) : nullptr;
      // Step 0: pre(input); step k: got OP partial (the partial is already pre-multiplied).
      const auto params = stepParams<D>(c, k > 0, k == 0, last && root);
      reduceStep<D, Op>(c, params, target, nullptr, got, k == 0 ? local : acc, p.size());
      if (k > 0) recvEnd(c, fromChild[k - 1]);
      acc = mine;
    }
    if (!root) sendEnd(c, up, bytes);
    // Down: the result from the parent (the root has it), kept and passed to the children.
    Src result = mine;
    if (!root) result = recvBegin(c, fromParent, bytes);
    Dst slots[2] = {nullptr, nullptr};
    for (int k = 0; k < children; ++k) slots[k] = sendBegin(c, down[k]);
    if (!root)
      copyStep(c, mine, slots[0], result, bytes);
    else if (children > 0)
      copyStep(c, slots[0], nullptr, result, bytes);
    if (children > 1) copyStep(c, slots[1], nullptr, result, bytes);
    if (!root) recvEnd(c, fromParent);
    for (int k = 0; k < children; ++k) sendEnd(c, down[k], bytes);
  }
}

/// One-shot keeps a link per peer: at most this many ranks (it is a small-scale algorithm).
inline constexpr int kOneShotMaxRanks = 16;

template <int D, class Op>
BRAID_DEVICE_FN void oneShotAllReduce(const ChannelContext& c) {
  const auto [a, n, r, size, in, out, channel] = Frame<D>(c);
  if (channel.size() == 0) return;
  // The links are made once, before any of them moves: every thread of the block then agrees on
  // each one's step.
  Link to[kOneShotMaxRanks], from[kOneShotMaxRanks];
  for (int k = 0; k < n; ++k) {
    if (k == r) continue;
    to[k] = sendLink(c, k);
    from[k] = recvLink(c, k);
  }
  const std::size_t chunk =
      n == 1 ? channel.size() : chunkCapacity(c, to[wrap(r + 1, n)].fifo) / size;
  for (std::size_t offset = 0; offset < channel.size(); offset += chunk) {
    const Range p = pieceOf(channel, 0, 1, offset, chunk);
    const std::size_t bytes = p.size() * size;
    const char* local = in + p.begin * size;
    char* mine = out + p.begin * size;
    // Everyone's input to everyone, starting with the next rank so that the ranks do not all
    // write to rank 0 first.
    for (int j = 1; j < n; ++j) {
      Link& link = to[wrap(r + j, n)];
      copyStep(c, sendBegin(c, link), nullptr, local, bytes);
      sendEnd(c, link, bytes);
    }
    // In place the output is the input: rank r's own term goes to the scratch before rank 0's
    // term overwrites it.
    Src own = local;
    if (local == mine && r > 0) {
      copyBytes(c.block, c.scratch, nullptr, local, bytes);
      c.block.sync();
      own = c.scratch;
    }
    // The sum in rank order, whichever rank computes it.
    for (int k = 0; k < n; ++k) {
      const Src term = k == r ? own : recvBegin(c, from[k], bytes);
      const auto params = stepParams<D>(c, k > 0, true, k == n - 1);
      reduceStep<D, Op>(c, params, mine, nullptr, k > 0 ? mine : nullptr, term, p.size());
      if (k != r) recvEnd(c, from[k]);
    }
  }
}

}  // namespace braid::kernels::device
