#include "algorithms/algorithm_registry.h"

#include <strings.h>

#include <array>
#include <cstring>
#include <string>

namespace braid {
namespace {

using Table = std::array<std::vector<const Algorithm*>, kNumCollectives>;

// One line per algorithm, under its collective; the tuner ranks them by the cost model (ties:
// this order).
const Table& table() {
  static const Table t = [] {
    Table r;
    auto add = [&r](CollType c, const Algorithm* a) { r[static_cast<size_t>(c)].push_back(a); };
    for (size_t c = 0; c < kNumCollectives; c++) add(static_cast<CollType>(c), selfCollective());
    add(CollType::kAllReduce, ringAllReduce());
    add(CollType::kAllReduce, treeAllReduce());
    add(CollType::kAllReduce, directAllReduce());
    add(CollType::kAllReduce, twoShotAllReduce());
    add(CollType::kAllReduce, rabenseifnerAllReduce());
    add(CollType::kAllReduce, recursiveDoublingAllReduce());
    add(CollType::kAllReduce, zeroCopyAllReduce());
    add(CollType::kAllReduce, lowLatencyAllReduce());
    add(CollType::kAllReduce, hierarchicalAllReduce());
    add(CollType::kAllReduce, hierarchicalTreeAllReduce());
    add(CollType::kBroadcast, ringBroadcast());
    add(CollType::kBroadcast, treeBroadcast());
    add(CollType::kBroadcast, hierarchicalBroadcast());
    add(CollType::kReduce, ringReduce());
    add(CollType::kReduce, hierarchicalReduce());
    add(CollType::kAllGather, ringAllGather());
    add(CollType::kAllGather, bruckAllGather());
    add(CollType::kAllGather, zeroCopyAllGather());
    add(CollType::kAllGather, hierarchicalAllGather());
    add(CollType::kReduceScatter, ringReduceScatter());
    add(CollType::kReduceScatter, bruckReduceScatter());
    add(CollType::kReduceScatter, zeroCopyReduceScatter());
    add(CollType::kReduceScatter, hierarchicalReduceScatter());
    return r;
  }();
  return t;
}

// Every registered name once, in order of first appearance; index + 1 is its id.
const std::vector<std::string>& names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> r;
    for (const auto& list : table())
      for (const Algorithm* a : list) {
        bool known = false;
        for (const std::string& s : r) known = known || s == a->name();
        if (!known) r.push_back(a->name());
      }
    return r;
  }();
  return n;
}

}  // namespace

const char* wireProtocolName(WireProtocol p) {
  return p == WireProtocol::kLL ? "LL" : "Simple";
}

const std::vector<const Algorithm*>& algorithmsFor(CollType coll) {
  return table()[static_cast<size_t>(coll)];
}

const Algorithm* findAlgorithm(CollType coll, std::string_view name) {
  for (const Algorithm* a : algorithmsFor(coll))
    if (name.size() == strlen(a->name()) && strncasecmp(a->name(), name.data(), name.size()) == 0)
      return a;
  return nullptr;
}

uint64_t algorithmId(std::string_view name) {
  const auto& n = names();
  for (size_t i = 0; i < n.size(); i++)
    if (n[i] == name) return i + 1;
  return 0;
}

const char* algorithmNameOf(uint64_t id) {
  const auto& n = names();
  return id >= 1 && id <= n.size() ? n[id - 1].c_str() : "";
}

}  // namespace braid
