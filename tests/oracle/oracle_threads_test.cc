// AllReduce oracle, ranks as threads of one process (label multirank). Threads can use every
// transport when BRAID_TRANSPORTS forces it, so the whole algorithm x transport grid runs here:
// every dtype x op at small counts on 1, 2, 3 and 5 ranks; a subset at many chunks on 4 and 8
// ranks; 16 MiB float32 and bfloat16 sums a few times.
#include "algorithms/algorithm_registry.h"
#include "oracle/oracle_grid.h"

namespace braid::oracle {
namespace {

using test::RankShape;

class ThreadsSmall : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ThreadsSmall, EveryDTypeAndOpExact) {
  runGridPoint(RankShape::kThreads, GetParam(), crossCases(allDTypes(), allOps(), smallCounts()));
}

std::vector<GridPoint> smallGrid() {
  std::vector<GridPoint> out;
  for (const char* transport : {"local", "shm", "tcp"}) {
    out.push_back({"Ring", transport, 1});  // one rank: no algorithm runs, only pre/post ops
    // Every registered allreduce the tuner ranks on one host, from the registry: a new one is
    // in the grid by its registration line. (Recursive doubling from 3 ranks: 3 and 5 fold one
    // rank in and out. ZeroCopy, LowLatency and the hierarchical ones need registered buffers,
    // small messages or hosts: their own grids below and in the processes' tests.)
    for (const Algorithm* a : algorithmsFor(CollType::kAllReduce)) {
      const AlgorithmTraits& t = a->traits();
      if (t.preference != Preference::kRanked || t.cost.formula != CostFormula::kSteps) continue;
      for (int n : {2, 3, 5})
        if (n >= t.fewestRanks) out.push_back({t.name, transport, n});
    }
  }
  // Threads share the address space: registered memory of any kind is read in place.
  for (int n : {2, 3, 5}) out.push_back({"ZeroCopy", "local", n, Registration::kRegister});
  out.push_back({"ZeroCopy", "local", 4, Registration::kEvenRanks});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Oracle, ThreadsSmall, ::testing::ValuesIn(smallGrid()), gridName);

// Window registration is collective (a bootstrap exchange per buffer): a dtype/op subset. Over
// the local transport: thread ranks over shm would map each FIFO twice in one process, which
// hides the FIFO's ordering from ThreadSanitizer while the buffers are read at one address.
// The low-latency mailbox (messages up to a mailbox entry; the slots carry larger ones).
class ThreadsMailbox : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ThreadsMailbox, EveryDTypeAndOpExact) {
  runGridPoint(RankShape::kThreads, GetParam(), mailboxCases());
}

INSTANTIATE_TEST_SUITE_P(Oracle, ThreadsMailbox,
                         ::testing::Values(GridPoint{"LowLatency", "local", 2},
                                           GridPoint{"LowLatency", "local", 3},
                                           GridPoint{"LowLatency", "local", 5},
                                           GridPoint{"LowLatency", "shm", 2},
                                           GridPoint{"LowLatency", "shm", 4}),
                         gridName);

class ThreadsWindows : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ThreadsWindows, SelectedDTypesAndOpsExact) {
  runGridPoint(RankShape::kThreads, GetParam(),
               crossCases({ncclFloat32, ncclBfloat16, ncclInt32},
                          {OpKind::kSum, OpKind::kAvg, OpKind::kPreMulSumHost}, smallCounts()));
}

INSTANTIATE_TEST_SUITE_P(Oracle, ThreadsWindows,
                         ::testing::Values(GridPoint{"ZeroCopy", "local", 3,
                                                     Registration::kWindow}),
                         gridName);

class ThreadsManyChunks : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ThreadsManyChunks, SelectedDTypesAndOpsExact) {
  std::vector<OracleCase> cases = crossCases(
      {ncclFloat32, ncclBfloat16, ncclInt8, ncclFloat8e4m3, ncclFloat64},
      {OpKind::kSum, OpKind::kMax, OpKind::kAvg, OpKind::kPreMulSumDevice}, {kSeveralChunks});
  std::vector<OracleCase> more =
      crossCases({ncclFloat16, ncclUint64, ncclInt32, ncclFloat8e5m2},
                 {OpKind::kProd, OpKind::kMin, OpKind::kPreMulSumHost}, {kSeveralChunks});
  cases.insert(cases.end(), more.begin(), more.end());
  runGridPoint(RankShape::kThreads, GetParam(), cases);
}

std::vector<GridPoint> chunkGrid() {
  std::vector<GridPoint> out;
  for (const char* algo : {"Ring", "Tree", "Direct", "TwoShot"}) {
    out.push_back({algo, "local", 4});
    out.push_back({algo, "local", 8});
    out.push_back({algo, "shm", 4});
    out.push_back({algo, "tcp", 4});
  }
  // Rabenseifner beyond powers of two shares its steps with the Bruck allgather and
  // reduce-scatter, whose exact grid (tests/collectives) covers 2-8 ranks on each transport; at
  // powers of two it halves and doubles in the output (4 and 8 ranks here, lent over TCP).
  out.push_back({"Rabenseifner", "local", 4});
  out.push_back({"Rabenseifner", "local", 8});  // halving and doubling: three steps each
  out.push_back({"Rabenseifner", "tcp", 4});
  // Recursive doubling: a power of two, and 6 and 7 ranks (two and three pairs fold first).
  out.push_back({"RecursiveDoubling", "local", 4});
  out.push_back({"RecursiveDoubling", "local", 6});
  out.push_back({"RecursiveDoubling", "local", 7});
  out.push_back({"RecursiveDoubling", "tcp", 4});
  out.push_back({"ZeroCopy", "local", 4, Registration::kRegister});
  out.push_back({"ZeroCopy", "local", 8, Registration::kRegister});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Oracle, ThreadsManyChunks, ::testing::ValuesIn(chunkGrid()), gridName);

class ThreadsLarge : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ThreadsLarge, Float32AndBfloat16Sum16MiB) {
  runGridPoint(RankShape::kThreads, GetParam(),
               {{ncclFloat32, OpKind::kSum, k16MiBFloats, false},
                {ncclBfloat16, OpKind::kSum, 2 * k16MiBFloats, true}});
}

INSTANTIATE_TEST_SUITE_P(Oracle, ThreadsLarge,
                         ::testing::Values(GridPoint{"Ring", "local", 4},
                                           GridPoint{"Tree", "local", 3},
                                           GridPoint{"Ring", "tcp", 2}),
                         gridName);

}  // namespace
}  // namespace braid::oracle
