// AllReduce oracle, ranks in separate network namespaces (label netns): real TCP between
// "hosts", and shared memory plus TCP when there are more ranks than namespaces.
#include "harness/rank_harness.h"
#include "oracle/oracle_grid.h"

namespace braid::oracle {
namespace {

using test::RankShape;

class NamespacesSmall : public ::testing::TestWithParam<GridPoint> {};

TEST_P(NamespacesSmall, EveryDTypeAndOpExact) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  runGridPoint(RankShape::kNamespaces, GetParam(),
               crossCases(allDTypes(), allOps(), smallCounts()));
}

INSTANTIATE_TEST_SUITE_P(Oracle, NamespacesSmall,
                         ::testing::Values(GridPoint{"Ring", "tcp", 2}, GridPoint{"Ring", "tcp", 3},
                                           GridPoint{"Tree", "tcp", 3}),
                         gridName);

class NamespacesMixed : public ::testing::TestWithParam<GridPoint> {};

// Five and six ranks in three namespaces, in contiguous blocks: neighbours in one namespace use
// shm, the others TCP; at six, hosts of two each, the ring allreduce runs its two rings.
TEST_P(NamespacesMixed, SelectedDTypesAndOpsAcrossShmAndTcp) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  runGridPoint(RankShape::kNamespaces, GetParam(),
               crossCases({ncclFloat32, ncclFloat16, ncclInt32, ncclFloat8e4m3},
                          {OpKind::kSum, OpKind::kMax, OpKind::kAvg, OpKind::kPreMulSumDevice},
                          {1, kPrimeAboveChunk, kSeveralChunks}));
}

INSTANTIATE_TEST_SUITE_P(Oracle, NamespacesMixed,
                         ::testing::Values(GridPoint{"Ring", "tcp", 5}, GridPoint{"Ring", "tcp", 6},
                                           GridPoint{"Tree", "tcp", 5}),
                         gridName);

class NamespacesLarge : public ::testing::TestWithParam<GridPoint> {};

TEST_P(NamespacesLarge, Float32AndBfloat16Sum16MiB) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  runGridPoint(RankShape::kNamespaces, GetParam(),
               {{ncclFloat32, OpKind::kSum, k16MiBFloats, false},
                {ncclBfloat16, OpKind::kSum, 2 * k16MiBFloats, true}});
}

INSTANTIATE_TEST_SUITE_P(Oracle, NamespacesLarge, ::testing::Values(GridPoint{"Ring", "tcp", 3}),
                         gridName);

}  // namespace
}  // namespace braid::oracle
