// Ring topology math (pure): neighbours and which chunk a rank handles at each ring step. A ring
// visits the ranks in rank order, or in an order given as position -> rank: the topology's,
// every host's ranks one after another, so that the ring crosses each host's network link once
// in and once out whatever the rank numbering (hostContiguousOrder).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace braid::patterns {

class Ring {
 public:
  /// The ring 0 -> 1 -> ... -> n-1 -> 0, seen from `rank`.
  Ring(int rank, int nranks) : nranks_(nranks), pos_(rank) {}
  /// The ring order[0] -> order[1] -> ... -> order[n-1] -> order[0] (a permutation of the
  /// ranks; empty: rank order), seen from the rank at `position`.
  static Ring atPosition(int position, std::span<const int> order, int nranks) {
    Ring ring(position, nranks);
    ring.order_ = order;
    return ring;
  }

  /// The same ring seen from `rank` (its position looked up in `order`).
  static Ring ofRank(int rank, std::span<const int> order, int nranks) {
    int position = rank;
    for (int p = 0; p < static_cast<int>(order.size()); p++)
      if (order[p] == rank) position = p;
    return atPosition(position, order, nranks);
  }

  int next() const { return at(pos_ + 1); }
  int prev() const { return at(pos_ - 1); }
  /// The chunk this rank works on `step` steps after working on its own (chunk r belongs to
  /// rank r: a reduce-scatter leaves it there). Steps go backwards so that what arrives from
  /// prev is the chunk prev worked on one step earlier.
  int chunkAt(int step) const { return at(pos_ - step); }

 private:
  int at(int position) const {
    const int p = (position % nranks_ + nranks_) % nranks_;
    return order_.empty() ? p : order_[p];
  }
  int nranks_;
  int pos_;
  std::span<const int> order_;
};

/// The ranks grouped by host: hosts in the order of their lowest rank, each host's ranks in rank
/// order (hostOf[r] names rank r's host). Empty when that is rank order already: one host, or
/// ranks numbered host by host.
std::vector<int> hostContiguousOrder(std::span<const uint64_t> hostOf);

/// The second ring across hosts (NCCL's second channel): the hosts in the same order, each
/// host's ranks (ranksOf[h], in the first ring's order) reversed. None of its hops is a hop of
/// the first ring in the same direction, so the two rings never share a connection, and its
/// hops between hosts leave from each host's first rank where the first ring's leave from its
/// last: the sending to other hosts is split between two ranks of every host. Empty where no
/// such ring exists (one host, or a host with one rank).
std::vector<int> reversedWithinHosts(std::span<const std::vector<int>> ranksOf);

}  // namespace braid::patterns
