// The algorithm recipe (docs/design.md, "Recipes"): every registered algorithm says what it is
// through its traits - a name NCCL_ALGO finds it by, unique within its collective, a protocol,
// a preference, and a cost shape the tuner's model prices on every kind of link - and has its
// row in docs/design.md's table of algorithms.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "algorithms/algorithm_registry.h"
#include "tuner/cost_model.h"

namespace braid {
namespace {

CommCostModel modelOn(LinkClass link, double oversubscribe) {
  const LinkCosts d = defaultLinkCosts();
  CommCostModel m;
  m.link = link;
  m.cost = link == LinkClass::kTcp ? d.tcp : link == LinkClass::kShm ? d.shm : d.local;
  m.withinHost = d.shm;
  m.oversubscribe = oversubscribe;
  return m;
}

CollArgs callOf(CollType coll, size_t bytes) {
  CollArgs args;
  args.coll = coll;
  args.count = bytes / 4;
  args.elemSize = 4;
  return args;
}

std::string designDoc() {
  std::ifstream in(std::string(BRAID_SOURCE_DIR) + "/docs/design.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every line of every kind of link: a positive, finite estimate that grows with the message.
void expectPriced(const Algorithm& a, CollType coll, const CommCostModel& m, int n) {
  const double small = estimateCollectiveUs(m, n, callOf(coll, 8), a);
  const double large = estimateCollectiveUs(m, n, callOf(coll, 64 << 20), a);
  EXPECT_TRUE(std::isfinite(small) && small > 0) << n << " ranks, 8 B: " << small;
  EXPECT_GT(large, small) << n << " ranks: 64 MiB costs no more than 8 B";
  EXPECT_LT(large, 1e9) << n << " ranks, 64 MiB";
}

TEST(AlgorithmTraits, EveryRegisteredAlgorithmDescribesItself) {
  const std::string design = designDoc();
  ASSERT_FALSE(design.empty()) << "docs/design.md not found under " << BRAID_SOURCE_DIR;
  int ranked = 0;
  for (size_t c = 0; c < kNumCollectives; c++) {
    const CollType coll = static_cast<CollType>(c);
    std::set<std::string> names;
    for (const Algorithm* a : algorithmsFor(coll)) {
      const AlgorithmTraits& t = a->traits();
      ASSERT_NE(t.name, nullptr);
      SCOPED_TRACE(std::string(collectiveInfo(coll).name) + " " + t.name);
      EXPECT_FALSE(std::string(t.name).empty());
      EXPECT_TRUE(names.insert(t.name).second) << "two algorithms answer to one name";
      EXPECT_EQ(findAlgorithm(coll, t.name), a);
      EXPECT_STREQ(algorithmNameOf(algorithmId(t.name)), t.name);
      // Its row in the design's table: **Name** (the hierarchical pair share one row).
      EXPECT_NE(design.find(std::string("**") + t.name + "**"), std::string::npos)
          << "docs/design.md's table of algorithms has no row for it";
      const CostModelShapes& cost = t.cost;
      switch (cost.formula) {
        case CostFormula::kCopy: {  // one rank: free in place, a copy out of place
          CollArgs args = callOf(coll, 4096);
          int buffer = 0;
          args.sendbuff = args.recvbuff = &buffer;
          EXPECT_EQ(estimateCollectiveUs(modelOn(LinkClass::kShm, 1), 1, args, *a), 0);
          args.recvbuff = nullptr;
          EXPECT_GT(estimateCollectiveUs(modelOn(LinkClass::kShm, 1), 1, args, *a), 0);
          break;
        }
        case CostFormula::kSteps:
          for (const CostShape* s : {&cost.shared, cost.dedicated ? &*cost.dedicated : nullptr,
                                     cost.tcp ? &*cost.tcp : nullptr,
                                     cost.tcpPowerOfTwo ? &*cost.tcpPowerOfTwo : nullptr})
            if (s) {
              EXPECT_GT(s->stepFactor, 0);
              EXPECT_GT(s->bytesFactor, 0);
            }
          for (int n : {2, 3, 4, 5, 8}) {
            expectPriced(*a, coll, modelOn(LinkClass::kLocal, 1), n);
            expectPriced(*a, coll, modelOn(LinkClass::kShm, 2), n);
            expectPriced(*a, coll, modelOn(LinkClass::kTcp, 1), n);
          }
          break;
        case CostFormula::kHierarchicalRing:
        case CostFormula::kHierarchicalTree: {
          CommCostModel m = modelOn(LinkClass::kTcp, 1);
          EXPECT_GE(estimateCollectiveUs(m, 4, callOf(coll, 8), *a), 1e300) << "one host";
          m.hosts = 2;
          m.ranksPerHost = 2;
          expectPriced(*a, coll, m, 4);
          m.hosts = 3;
          m.ranksPerHost = 3;
          expectPriced(*a, coll, m, 9);
          break;
        }
      }
      if (t.preference == Preference::kRanked) ++ranked;
    }
    // Self, for one rank, is the first of every collective (nothing else serves n = 1).
    ASSERT_FALSE(algorithmsFor(coll).empty());
    EXPECT_EQ(algorithmsFor(coll).front(), selfCollective());
  }
  EXPECT_GE(ranked, 10);
}

// The protocol NCCL_PROTO filters on and the preference the tuner reads come from the traits:
// LowLatency is the one LL algorithm; Self, ZeroCopy and LowLatency are taken before ranking.
TEST(AlgorithmTraits, ProtocolsAndPreferences) {
  std::set<std::string> ll, preferred;
  for (size_t c = 0; c < kNumCollectives; c++)
    for (const Algorithm* a : algorithmsFor(static_cast<CollType>(c))) {
      if (a->traits().protocol == WireProtocol::kLL) ll.insert(a->name());
      if (a->traits().preference == Preference::kWhereverSupported) preferred.insert(a->name());
    }
  EXPECT_EQ(ll, std::set<std::string>({"LowLatency"}));
  EXPECT_EQ(preferred, std::set<std::string>({"Self", "ZeroCopy", "LowLatency"}));
  EXPECT_STREQ(wireProtocolName(WireProtocol::kLL), "LL");
  EXPECT_STREQ(wireProtocolName(WireProtocol::kSimple), "Simple");
  EXPECT_EQ(findAlgorithm(CollType::kAllReduce, "ring"), ringAllReduce());
  EXPECT_EQ(findAlgorithm(CollType::kAllReduce, "Rin"), nullptr);
  EXPECT_EQ(findAlgorithm(CollType::kBroadcast, "Direct"), nullptr);
}

}  // namespace
}  // namespace braid
