// The exhaustive AllReduce oracle sweep (label soak, registered with -DBRAID_SOAK=ON): every
// dtype x op x algorithm x transport x rank count {1,2,3,4,5,8} x count {0, 1, 7, a prime above
// the chunk size, several chunks}, in place and out of place, in every rank shape; and 16 MiB
// of every dtype x op at each grid point. BRAID_ORACLE_SEED varies the data between sweeps.
#include "harness/rank_harness.h"
#include "oracle/oracle_grid.h"

namespace braid::oracle {
namespace {

using test::RankShape;

struct SoakPoint {
  RankShape shape;
  GridPoint grid;
};

void PrintTo(const SoakPoint& p, std::ostream* os) {
  *os << test::shapeName(p.shape) << " ";
  PrintTo(p.grid, os);
}

std::string soakName(const ::testing::TestParamInfo<SoakPoint>& info) {
  return std::string(test::shapeName(info.param.shape)) + "_" + info.param.grid.algo + "_" +
         info.param.grid.transport + "_" + std::to_string(info.param.grid.nranks) + "ranks";
}

std::vector<SoakPoint> soakGrid() {
  std::vector<SoakPoint> out;
  const std::vector<int> ranks = {1, 2, 3, 4, 5, 8};
  for (const char* algo : {"Ring", "Tree"}) {
    for (int n : ranks) {
      for (const char* transport : {"local", "shm", "tcp"})
        out.push_back({RankShape::kThreads, {algo, transport, n}});
      for (const char* transport : {"shm", "tcp"})
        out.push_back({RankShape::kProcesses, {algo, transport, n}});
      out.push_back({RankShape::kNamespaces, {algo, "tcp", n}});
    }
  }
  return out;
}

void skipIfNoNamespaces(const SoakPoint& p) {
  if (p.shape != RankShape::kNamespaces || test::isNamespaceChild()) return;
  std::string reason = test::namespacesUnavailableReason();
  if (!reason.empty()) GTEST_SKIP() << reason;
}

class Soak : public ::testing::TestWithParam<SoakPoint> {};

TEST_P(Soak, EveryDTypeOpAndCount) {
  skipIfNoNamespaces(GetParam());
  if (::testing::Test::IsSkipped()) return;
  runGridPoint(GetParam().shape, GetParam().grid,
               crossCases(allDTypes(), allOps(),
                          {0, 1, 7, kPrimeAboveChunk, kSeveralChunks, 3 * kSeveralChunks + 2}),
               kSlotBytes, 1800);
}

TEST_P(Soak, EveryDTypeAndOpAt16MiB) {
  skipIfNoNamespaces(GetParam());
  if (::testing::Test::IsSkipped()) return;
  std::vector<OracleCase> cases;
  for (ncclDataType_t d : allDTypes()) {
    size_t count = (16u << 20) / dtypeInfo(d).size;
    for (const OracleCase& c : crossCases({d}, allOps(), {count})) cases.push_back(c);
  }
  runGridPoint(GetParam().shape, GetParam().grid, cases, kSlotBytes, 3600);
}

INSTANTIATE_TEST_SUITE_P(Oracle, Soak, ::testing::ValuesIn(soakGrid()), soakName);

}  // namespace
}  // namespace braid::oracle
