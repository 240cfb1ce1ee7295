// The two rings a hierarchical collective runs on: the ring of the ranks of this rank's host
// (over shared memory), and the ring of its counterparts (the rank at its local index on every
// host, over the network). Every hierarchical collective is a few ring schedules
// (ring_schedules.h) over them in a row (allreduce_hierarchical.cc and its siblings); all local
// ranks run their counterpart rings at once, each over its own connections, so a host's link
// carries l streams side by side.
#pragma once

#include "algorithms/ring_schedules.h"
#include "patterns/tree.h"

namespace braid {

/// Whether a hierarchical schedule can run here: ranks on several hosts, as many on each and
/// more than one. The rings within hosts and between counterparts are among every rank's
/// neighbours (Team::neighboursOf), connected at init however many ranks there are; a schedule
/// that talks to other peers (the rooted ones: the broadcast's roll call to the rank before the
/// root, the reduce's gather at the root) needs `allPairs`, every pair connected.
inline bool hierarchyApplies(const Context& ctx, bool allPairs) {
  const Team::Hosts& hosts = ctx.team.hosts;
  return hosts.count > 1 && hosts.ranksPerHost > 1 && (!allPairs || ctx.team.allPairsConnected());
}

/// The ring of this rank's host: labels are local indices.
inline SubRing hostLocalRing(const Team::Hosts& hosts) {
  const int l = static_cast<int>(hosts.local.size()), me = hosts.localIndex;
  const patterns::Ring ring{me, l};
  return {ring, l, me, hosts.local[ring.prev()], hosts.local[ring.next()]};
}

/// The ring of this rank's counterparts on every host: labels are host indices.
inline SubRing counterpartRing(const Team::Hosts& hosts) {
  const int h = hosts.count, me = hosts.index;
  const patterns::Ring ring{me, h};
  return {ring, h, me, hosts.counterparts[ring.prev()], hosts.counterparts[ring.next()]};
}

/// Tree `which` of the double binary tree over this rank's counterparts (one per host), as ranks.
inline patterns::TreeNode counterpartTree(const Team::Hosts& hosts, int which) {
  patterns::TreeNode node = patterns::doubleBinaryTree(hosts.index, hosts.count, which);
  auto rankOf = [&](int host) { return host < 0 ? -1 : hosts.counterparts[host]; };
  node.parent = rankOf(node.parent);
  for (int& child : node.children) child = rankOf(child);
  return node;
}

}  // namespace braid
