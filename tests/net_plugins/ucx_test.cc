// The UCX net plugin (transports/net/ucx) under Braid, UCX over its TCP transport: every
// collective exact between forked processes on this host (label multiproc) and between network
// namespaces (label netns, UCX_NET_DEVICES=eth0: hosts joined by a bridge), at each interface
// version the plugin exports; every connection the plugin's (the oracle reads each connection's
// transport from the communicator). Faults over UCX are in tests/fault (wire net).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/collective_sweep.h"
#include "harness/rank_harness.h"
#include "oracle/oracle_grid.h"

namespace braid::oracle {
namespace {

using test::RankShape;

#ifdef UCX_NETNS_TESTS
constexpr RankShape kShape = RankShape::kNamespaces;
constexpr const char* kDevice = "eth0";
#else
constexpr RankShape kShape = RankShape::kProcesses;
constexpr const char* kDevice = "lo";
#endif

Env ucxEnv(const char* plugin) {
  Env env = {{"NCCL_NET_PLUGIN", plugin},
             {"NCCL_NET", "UCX"},
             {"UCX_TLS", "tcp"},
             {"UCX_NET_DEVICES", kDevice},
             {"BRAID_TIMEOUT_S", "60"}};
  if (kShape == RankShape::kProcesses) {
    env.push_back({"BRAID_TRANSPORTS", "net"});
    env.push_back({"NCCL_SOCKET_IFNAME", "lo"});
  }
  return env;
}

#define SKIP_WITHOUT_SHAPE()                                               \
  do {                                                                     \
    if (kShape == RankShape::kNamespaces) BRAID_SKIP_WITHOUT_NAMESPACES(); \
  } while (0)

TEST(Ucx, AllReduceEveryDTypeAndOpExact) {
  SKIP_WITHOUT_SHAPE();
  for (const GridPoint& p : {GridPoint{"Ring", "net", 2}, GridPoint{"Tree", "net", 3}})
    runGridPoint(kShape, p, crossCases(allDTypes(), allOps(), {0, 1, 7, kPrimeAboveChunk}),
                 kSlotBytes, 240, ucxEnv(UCX_PLUGIN));
}

TEST(Ucx, AllReduceLargeAndManyChunks) {
  SKIP_WITHOUT_SHAPE();
  // Five ranks: between namespaces, two or three per host (shared memory inside, UCX between).
  runGridPoint(kShape, GridPoint{"Ring", "net", 5},
               crossCases({ncclFloat32, ncclBfloat16, ncclInt64}, {OpKind::kSum, OpKind::kMax},
                          {kSeveralChunks}),
               kSlotBytes, 240, ucxEnv(UCX_PLUGIN));
  runGridPoint(kShape, GridPoint{"Ring", "net", 3},
               {{ncclFloat32, OpKind::kSum, k16MiBFloats, false}}, 512 * 1024, 240,
               ucxEnv(UCX_PLUGIN));
}

TEST(Ucx, OtherCollectivesExact) {
  SKIP_WITHOUT_SHAPE();
  test::RunReport report;
  Env env = ucxEnv(UCX_PLUGIN);
  env.push_back({"BRAID_SLOT_BYTES", "4096"});
  auto fn = [](test::RankContext& ctx) { collectives::sweep(ctx, false); };
  if (kShape == RankShape::kNamespaces) {
    test::NamespaceOptions o;
    o.env = env;
    o.timeoutS = 400;
    o.namespaces = 3;
    report = test::runInNamespaces(3, fn, o);
  } else {
    test::RunOptions o;
    o.env = env;
    o.timeoutS = 400;
    report = test::runProcesses(3, fn, o);
  }
  if (test::isNamespaceChild()) return;
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

struct Variant {
  int version;
  const char* path;
};
void PrintTo(const Variant& v, std::ostream* os) {
  *os << "v" << v.version;
}

class UcxVersion : public ::testing::TestWithParam<Variant> {};

TEST_P(UcxVersion, AllReduceExact) {
  SKIP_WITHOUT_SHAPE();
  runGridPoint(kShape, GridPoint{"Ring", "net", 2},
               crossCases({ncclFloat32, ncclInt8, ncclFloat16}, {OpKind::kSum, OpKind::kAvg},
                          {1, kPrimeAboveChunk, kSeveralChunks}),
               kSlotBytes, 240, ucxEnv(GetParam().path));
}

INSTANTIATE_TEST_SUITE_P(Ucx, UcxVersion,
                         ::testing::Values(Variant{8, UCX_V8}, Variant{9, UCX_V9},
                                           Variant{10, UCX_V10}, Variant{11, UCX_V11}),
                         [](const ::testing::TestParamInfo<Variant>& info) {
                           return "v" + std::to_string(info.param.version);
                         });

}  // namespace
}  // namespace braid::oracle
