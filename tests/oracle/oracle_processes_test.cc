// AllReduce oracle, ranks as forked processes on this host (label multiproc): the shared-memory
// transport between processes, and TCP when forced, for every algorithm; ZeroCopy with buffers
// registered on every rank, as windows, and on some ranks only.
#include "oracle/oracle_grid.h"

namespace braid::oracle {
namespace {

using test::RankShape;

class ProcessesSmall : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ProcessesSmall, EveryDTypeAndOpExact) {
  runGridPoint(RankShape::kProcesses, GetParam(), crossCases(allDTypes(), allOps(), smallCounts()));
}

std::vector<GridPoint> smallGrid() {
  std::vector<GridPoint> out = {{"Ring", "shm", 1}};
  for (const char* algo : {"Ring", "Tree", "Direct", "TwoShot"}) {
    for (int n : {2, 3, 5}) out.push_back({algo, "shm", n});
    for (int n : {2, 3}) out.push_back({algo, "tcp", n});
  }
  // Rabenseifner at one odd count per transport (its threads grid covers the rest).
  out.push_back({"Rabenseifner", "shm", 3});
  out.push_back({"Rabenseifner", "tcp", 3});
  out.push_back({"Rabenseifner", "tcp", 4});  // halving and doubling, pieces lent
  out.push_back({"RecursiveDoubling", "shm", 5});
  out.push_back({"RecursiveDoubling", "tcp", 3});
  // Zero-copy from registered ncclMemAlloc memory, which peers map; and the fallback when only
  // some ranks registered.
  for (int n : {2, 3, 5}) out.push_back({"ZeroCopy", "shm", n, Registration::kRegister});
  out.push_back({"ZeroCopy", "shm", 3, Registration::kEvenRanks});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Oracle, ProcessesSmall, ::testing::ValuesIn(smallGrid()), gridName);

// The low-latency mailbox between processes.
class ProcessesMailbox : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ProcessesMailbox, EveryDTypeAndOpExact) {
  runGridPoint(RankShape::kProcesses, GetParam(), mailboxCases());
}

INSTANTIATE_TEST_SUITE_P(Oracle, ProcessesMailbox,
                         ::testing::Values(GridPoint{"LowLatency", "shm", 2},
                                           GridPoint{"LowLatency", "shm", 3},
                                           GridPoint{"LowLatency", "shm", 5}),
                         gridName);

// Window registration is collective (a bootstrap exchange per buffer): a dtype/op subset.
class ProcessesWindows : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ProcessesWindows, SelectedDTypesAndOpsExact) {
  runGridPoint(RankShape::kProcesses, GetParam(),
               crossCases({ncclFloat32, ncclBfloat16, ncclInt32},
                          {OpKind::kSum, OpKind::kAvg, OpKind::kPreMulSumHost}, smallCounts()));
}

INSTANTIATE_TEST_SUITE_P(Oracle, ProcessesWindows,
                         ::testing::Values(GridPoint{"ZeroCopy", "shm", 3, Registration::kWindow}),
                         gridName);

class ProcessesManyChunks : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ProcessesManyChunks, SelectedDTypesAndOpsExact) {
  runGridPoint(RankShape::kProcesses, GetParam(),
               crossCases({ncclFloat32, ncclBfloat16, ncclInt64, ncclFloat8e5m2},
                          {OpKind::kSum, OpKind::kMin, OpKind::kAvg, OpKind::kPreMulSumHost},
                          {kSeveralChunks}));
}

INSTANTIATE_TEST_SUITE_P(Oracle, ProcessesManyChunks,
                         ::testing::Values(GridPoint{"Ring", "shm", 8}, GridPoint{"Tree", "shm", 8},
                                           GridPoint{"Ring", "tcp", 4},
                                           GridPoint{"ZeroCopy", "shm", 4, Registration::kRegister},
                                           // Two rings across hosts (Team::secondRingOrder),
                                           // ranks interleaved over 2 and 3 hosts.
                                           GridPoint{"Ring", "shm", 4, Registration::kNone, 2},
                                           GridPoint{"Ring", "shm", 6, Registration::kNone, 3}),
                         gridName);

class ProcessesLarge : public ::testing::TestWithParam<GridPoint> {};

TEST_P(ProcessesLarge, Float32AndBfloat16Sum16MiB) {
  runGridPoint(RankShape::kProcesses, GetParam(),
               {{ncclFloat32, OpKind::kSum, k16MiBFloats, true},
                {ncclBfloat16, OpKind::kSum, 2 * k16MiBFloats, false}});
}

INSTANTIATE_TEST_SUITE_P(Oracle, ProcessesLarge,
                         ::testing::Values(GridPoint{"Ring", "shm", 3},
                                           GridPoint{"ZeroCopy", "shm", 3,
                                                     Registration::kRegister}),
                         gridName);

}  // namespace
}  // namespace braid::oracle
