#include "algorithms/collectives.h"

namespace braid {
namespace {

using C = CollType;
using E = Extent;

// In CollType's order. Traffic: allreduce's ring moves 2(n-1)/n and reduces (n-1)/n; a
// broadcast pipeline moves the message once after its first slot crossed n-2 hops; allgather
// and reduce-scatter count per rank, so each rank moves (n-1) blocks of the call's count.
constexpr CollectiveInfo kCollectives[kNumCollectives] = {
    {C::kAllReduce, "AllReduce", false, true, E::kCount, E::kCount, {0, 2, 0, 0}, {0, 1, 0, 0}},
    {C::kBroadcast, "Broadcast", true, false, E::kRootOnly, E::kCount, {1, 0, 0, 1}, {}},
    {C::kReduce, "Reduce", true, true, E::kCount, E::kRootOnly, {1, 0, 0, 0}, {1, 0, 0, 0}},
    {C::kAllGather, "AllGather", false, false, E::kCount, E::kRanks, {0, 0, 1, 0}, {}},
    {C::kReduceScatter,
     "ReduceScatter",
     false,
     true,
     E::kRanks,
     E::kCount,
     {0, 0, 1, 0},
     {0, 0, 1, 0}},
};

constexpr bool inOrder() {
  for (size_t i = 0; i < kNumCollectives; i++)
    if (static_cast<size_t>(kCollectives[i].type) != i) return false;
  return true;
}
static_assert(inOrder(), "kCollectives lists the collectives in CollType's order");

}  // namespace

const CollectiveInfo& collectiveInfo(CollType c) {
  return kCollectives[static_cast<size_t>(c)];
}

size_t extentBytes(Extent e, size_t bytes, int nranks, bool isRoot) {
  switch (e) {
    case Extent::kCount:
      return bytes;
    case Extent::kRanks:
      return bytes * static_cast<size_t>(nranks);
    case Extent::kRootOnly:
      return isRoot ? bytes : 0;
  }
  return bytes;
}

}  // namespace braid
