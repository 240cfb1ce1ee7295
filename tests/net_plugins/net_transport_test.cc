// The net transport over a plugin as awkward as the interface allows (shaky_net_plugin.cc), at
// each interface version: every collective exact on ranks as threads, every connection the
// plugin's (the oracle reads each connection's transport from the communicator).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/collective_sweep.h"
#include "harness/rank_harness.h"
#include "oracle/oracle_grid.h"

namespace braid::oracle {
namespace {

struct Variant {
  int version;
  const char* path;
};
void PrintTo(const Variant& v, std::ostream* os) {
  *os << "v" << v.version;
}

std::vector<Variant> variants() {
  return {{8, SHAKY_V8}, {9, SHAKY_V9}, {10, SHAKY_V10}, {11, SHAKY_V11}};
}

Env pluginEnv(const Variant& v) {
  return {{"NCCL_NET_PLUGIN", v.path}, {"NCCL_NET", "Shaky"}, {"BRAID_TIMEOUT_S", "60"}};
}

class ShakyPlugin : public ::testing::TestWithParam<Variant> {};

TEST_P(ShakyPlugin, AllReduceEveryDTypeAndOpExact) {
  for (const GridPoint& p : {GridPoint{"Ring", "net", 2}, GridPoint{"Tree", "net", 3}})
    runGridPoint(test::RankShape::kThreads, p,
                 crossCases(allDTypes(), allOps(), {0, 1, 7, kPrimeAboveChunk}), kSlotBytes, 240,
                 pluginEnv(GetParam()));
  runGridPoint(test::RankShape::kThreads, GridPoint{"Ring", "net", 5},
               crossCases({ncclFloat32, ncclInt8, ncclBfloat16}, {OpKind::kSum, OpKind::kAvg},
                          {kSeveralChunks}),
               kSlotBytes, 240, pluginEnv(GetParam()));
}

TEST_P(ShakyPlugin, OtherCollectivesExact) {
  test::RunOptions o;
  o.timeoutS = 240;
  o.env = pluginEnv(GetParam());
  o.env.push_back({"BRAID_TRANSPORTS", "net"});
  o.env.push_back({"BRAID_SLOT_BYTES", "4096"});
  for (int n : {2, 3}) {
    test::RunReport report = test::runThreads(
        n, [n](test::RankContext& ctx) { collectives::sweep(ctx, n == 2); }, o);
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

INSTANTIATE_TEST_SUITE_P(NetTransport, ShakyPlugin, ::testing::ValuesIn(variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return "v" + std::to_string(info.param.version);
                         });

}  // namespace
}  // namespace braid::oracle
