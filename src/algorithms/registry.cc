#include "algorithms/registry.h"

namespace braid {

const char* collName(CollType c) {
  switch (c) {
    case CollType::kAllReduce:
      return "AllReduce";
    case CollType::kBroadcast:
      return "Broadcast";
    case CollType::kReduce:
      return "Reduce";
    case CollType::kAllGather:
      return "AllGather";
    case CollType::kReduceScatter:
      return "ReduceScatter";
  }
  return "?";
}

// The algorithms per collective; the selector ranks them by the cost model (ties: this order).
const std::vector<const Algorithm*>& algorithmsFor(CollType coll) {
  static const std::vector<const Algorithm*> allReduce = {
      selfCollective(),   ringAllReduce(),         treeAllReduce(),     directAllReduce(),
      twoShotAllReduce(), rabenseifnerAllReduce(), zeroCopyAllReduce(), lowLatencyAllReduce()};
  static const std::vector<const Algorithm*> broadcast = {selfCollective(), ringBroadcast(),
                                                          treeBroadcast()};
  static const std::vector<const Algorithm*> reduce = {selfCollective(), ringReduce()};
  static const std::vector<const Algorithm*> allGather = {selfCollective(), ringAllGather(),
                                                          bruckAllGather(), zeroCopyAllGather()};
  static const std::vector<const Algorithm*> reduceScatter = {
      selfCollective(), ringReduceScatter(), bruckReduceScatter(), zeroCopyReduceScatter()};
  switch (coll) {
    case CollType::kAllReduce:
      return allReduce;
    case CollType::kBroadcast:
      return broadcast;
    case CollType::kReduce:
      return reduce;
    case CollType::kAllGather:
      return allGather;
    case CollType::kReduceScatter:
      return reduceScatter;
  }
  return allReduce;
}

}  // namespace braid
