// What the ring broadcast and reduce send to other hosts, rank by rank, written from the rings'
// definition rather than from the library: across hosts the first ring visits the hosts in the
// order of their lowest rank, each host's ranks in rank order, and the second visits them alike
// with each host's ranks in reverse. A broadcast runs down each ring's chain from the root (every
// hop but the one into the root), a reduce up it to the root (every hop but the one out of it);
// a large message goes half on each ring. Tests compare braidCommGetTraffic's bytes to other
// hosts with these, so a schedule that leaves the second ring idle fails them.
#pragma once

#include <algorithm>
#include <vector>

namespace braid::test {

/// The ring over ranks 0..n-1 on hosts `hostOf[r]`: hosts in the order of their lowest rank,
/// each host's ranks ascending, or descending when `reversedWithinHosts` (the second ring).
inline std::vector<int> hostOrderedRing(const std::vector<int>& hostOf, bool reversedWithinHosts) {
  std::vector<int> hosts, order;
  for (int h : hostOf)
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) hosts.push_back(h);
  for (int h : hosts) {
    std::vector<int> on;
    for (int r = 0; r < static_cast<int>(hostOf.size()); r++)
      if (hostOf[r] == h) on.push_back(r);
    if (reversedWithinHosts) std::reverse(on.begin(), on.end());
    order.insert(order.end(), on.begin(), on.end());
  }
  return order;
}

/// Adds to `out[r]` what rank r sends to other hosts in a chain along `ring` carrying `share`
/// per hop: down from `root` (a broadcast) or, when `towardRoot`, up to it (a reduce).
inline void addChainToOtherHosts(const std::vector<int>& ring, const std::vector<int>& hostOf,
                                 int root, bool towardRoot, double share,
                                 std::vector<double>* out) {
  const size_t n = ring.size();
  for (size_t i = 0; i < n; i++) {
    const int from = ring[i], to = ring[(i + 1) % n];
    if ((towardRoot ? from : to) == root) continue;  // the hop the chain leaves out
    if (hostOf[from] != hostOf[to]) (*out)[from] += share;
  }
}

/// What each rank sends to other hosts in a ring broadcast (or, when `reduce`, a ring reduce)
/// rooted at `root`, as a fraction of the message: on one ring, or half on each of two.
inline std::vector<double> ringChainToOtherHosts(const std::vector<int>& hostOf, int root,
                                                 bool reduce, bool twoRings) {
  std::vector<double> out(hostOf.size(), 0.0);
  addChainToOtherHosts(hostOrderedRing(hostOf, false), hostOf, root, reduce, twoRings ? 0.5 : 1.0,
                       &out);
  if (twoRings)
    addChainToOtherHosts(hostOrderedRing(hostOf, true), hostOf, root, reduce, 0.5, &out);
  return out;
}

}  // namespace braid::test
