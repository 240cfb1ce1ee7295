// Rings that know the hosts (label netns): 4 ranks on 2 namespace "hosts", numbered host by host
// (blocks) or interleaved (rank r on host r % 2, as hostfiles and schedulers often number them).
// The ring schedules must give exact results either way, and the ring must cross the network
// only twice (into each host once), whatever the numbering: the bytes each rank sent to other
// hosts (braidCommGetTraffic) are checked against the model's count. BRAID_RING_ORDER=rank
// brings back the rank-numbered ring, whose every hop crosses when ranks are interleaved: the
// same count shows that, so the check can fail.
#include <gtest/gtest.h>
#include <strings.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"
#include "harness/ring_traffic.h"

namespace braid::test {
namespace {

constexpr int kRanks = 4;
constexpr size_t kCount = 1000003;  // a prime: chunks of unequal size

int32_t inputOf(int rank, size_t i) {
  return static_cast<int32_t>((i * 7 + 3) % 1009) - rank * 5;
}

uint64_t crossHostBytes(ncclComm_t comm) {
  braidTraffic_t t{};
  return braidCommGetTraffic(comm, &t) == ncclSuccess ? t.bytesToOtherHosts : ~uint64_t(0);
}

std::string lastAlgorithm(ncclComm_t comm) {
  char name[32] = "";
  braidCommLastAlgorithm(comm, name, sizeof(name));
  return name;
}

// Allreduce, reduce-scatter, allgather, broadcast (from the last rank) and reduce (to rank 1) on
// the ring, every element checked; reports the bytes each sent to the other host ("allreduce",
// "reducescatter", "allgather", "broadcast", "reduce").
void ringCollectives(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  std::vector<int32_t> in(kCount), out(kCount);
  for (size_t i = 0; i < kCount; i++) in[i] = inputOf(me, i);
  auto fail = [&](const char* what) {
    ctx.fail(std::string(what) + ": " + ncclGetLastError(comm));
  };
  auto expectedSum = [&](size_t i) {
    int64_t sum = 0;
    for (int r = 0; r < n; r++) sum += inputOf(r, i);
    return static_cast<int32_t>(sum);
  };
  auto checkAll = [&](const char* what, size_t count, auto expected) {
    for (size_t i = 0; i < count; i++)
      if (out[i] != expected(i)) {
        ctx.fail(std::string(what) + ": element " + std::to_string(i) + " is " +
                 std::to_string(out[i]) + ", expected " + std::to_string(expected(i)));
        return;
      }
  };

  uint64_t before = crossHostBytes(comm);
  std::fill(out.begin(), out.end(), INT32_MIN);
  if (ncclAllReduce(in.data(), out.data(), kCount, ncclInt32, ncclSum, comm, nullptr) !=
      ncclSuccess)
    return fail("ncclAllReduce");
  ctx.report("allreduce", std::to_string(crossHostBytes(comm) - before));
  ctx.report("allreduce.algorithm", lastAlgorithm(comm));
  checkAll("allreduce", kCount, expectedSum);

  const size_t block = kCount / n;
  before = crossHostBytes(comm);
  std::fill(out.begin(), out.end(), INT32_MIN);
  if (ncclReduceScatter(in.data(), out.data(), block, ncclInt32, ncclSum, comm, nullptr) !=
      ncclSuccess)
    return fail("ncclReduceScatter");
  ctx.report("reducescatter", std::to_string(crossHostBytes(comm) - before));
  ctx.report("reducescatter.algorithm", lastAlgorithm(comm));
  checkAll("reducescatter", block, [&](size_t i) { return expectedSum(me * block + i); });

  before = crossHostBytes(comm);
  std::fill(out.begin(), out.end(), INT32_MIN);
  if (ncclAllGather(in.data(), out.data(), block, ncclInt32, comm, nullptr) != ncclSuccess)
    return fail("ncclAllGather");
  ctx.report("allgather", std::to_string(crossHostBytes(comm) - before));
  ctx.report("allgather.algorithm", lastAlgorithm(comm));
  checkAll("allgather", block * n, [&](size_t i) { return inputOf(int(i / block), i % block); });

  const int from = n - 1, to = 1;
  before = crossHostBytes(comm);
  std::fill(out.begin(), out.end(), INT32_MIN);
  if (ncclBroadcast(in.data(), out.data(), kCount, ncclInt32, from, comm, nullptr) != ncclSuccess)
    return fail("ncclBroadcast");
  ctx.report("broadcast", std::to_string(crossHostBytes(comm) - before));
  ctx.report("broadcast.algorithm", lastAlgorithm(comm));
  checkAll("broadcast", kCount, [&](size_t i) { return inputOf(from, i); });

  before = crossHostBytes(comm);
  std::fill(out.begin(), out.end(), INT32_MIN);
  if (ncclReduce(in.data(), out.data(), kCount, ncclInt32, ncclSum, to, comm, nullptr) !=
      ncclSuccess)
    return fail("ncclReduce");
  ctx.report("reduce", std::to_string(crossHostBytes(comm) - before));
  ctx.report("reduce.algorithm", lastAlgorithm(comm));
  if (me == to) checkAll("reduce", kCount, expectedSum);
  ncclCommDestroy(comm);
}

// An allreduce across hosts (the hierarchical one unless NCCL_ALGO forces another): exact int32
// sum, avg (integer: the total divided once, truncated) and premulsum (the scalar applied once per
// rank, whatever the phases), at sizes 0, 1, 7 and a prime; in place and out of place; float32 avg
// against a float64 reference. Reports the bytes the large sum sent to other hosts ("allreduce").
void allReduceOnHosts(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  auto fail = [&](const std::string& what) { ctx.fail(what + ": " + ncclGetLastError(comm)); };
  const char* forcedAlgo = getenv("NCCL_ALGO");
  const bool forced = forcedAlgo != nullptr;
  // "allreduce:Name" forces Name; the tuner's choice for the large message is Hierarchical.
  const std::string want = forced ? strchr(forcedAlgo, ':') + 1 : "Hierarchical";
  int32_t scalar = 3;
  ncclRedOp_t premul;
  if (ncclRedOpCreatePreMulSum(&premul, &scalar, ncclInt32, ncclScalarHostImmediate, comm) !=
      ncclSuccess)
    return fail("ncclRedOpCreatePreMulSum");
  for (size_t count : {size_t(0), size_t(1), size_t(7), kCount}) {
    for (ncclRedOp_t op : {ncclSum, ncclAvg, premul}) {
      for (bool inPlace : {false, true}) {
        std::vector<int32_t> in(count), out(count, INT32_MIN);
        for (size_t i = 0; i < count; i++) in[i] = inputOf(me, i);
        int32_t* dst = inPlace ? in.data() : out.data();
        const uint64_t before = crossHostBytes(comm);
        if (ncclAllReduce(in.data(), dst, count, ncclInt32, op, comm, nullptr) != ncclSuccess)
          return fail("ncclAllReduce of " + std::to_string(count));
        if (count == kCount && op == ncclSum && !inPlace)
          ctx.report("allreduce", std::to_string(crossHostBytes(comm) - before));
        // Forced, every call runs it; the tuner takes it for the large message (small ones go
        // by recursive doubling: one step across the network where Hierarchical takes two).
        char algo[32];
        braidCommLastAlgorithm(comm, algo, sizeof(algo));
        const bool expected = forced ? count > 0 : count == kCount;
        if (expected && strcasecmp(algo, want.c_str()) != 0)
          return ctx.fail(std::string("ran ") + algo + " for " + std::to_string(count) +
                          " elements, not " + want);
        for (size_t i = 0; i < count; i++) {
          int64_t sum = 0;
          for (int r = 0; r < n; r++) sum += (op == premul ? scalar : 1) * inputOf(r, i);
          const int32_t expected = static_cast<int32_t>(op == ncclAvg ? sum / n : sum);
          if (dst[i] != expected)
            return ctx.fail("count " + std::to_string(count) + " op " + std::to_string(op) +
                            (inPlace ? " in place" : "") + ": element " + std::to_string(i) +
                            " is " + std::to_string(dst[i]) + ", expected " +
                            std::to_string(expected));
        }
      }
    }
  }
  ncclRedOpDestroy(premul, comm);
  std::vector<float> in(kCount), out(kCount, -1.0f);
  auto value = [](int r, size_t i) { return 0.001f * float((i * 31 + r * 17) % 997) - 0.4f; };
  for (size_t i = 0; i < kCount; i++) in[i] = value(me, i);
  if (ncclAllReduce(in.data(), out.data(), kCount, ncclFloat32, ncclAvg, comm, nullptr) !=
      ncclSuccess)
    return fail("float ncclAllReduce");
  // NCCL's float average: each input times (float)(1/n), rounded to float, summed.
  const float inverse = static_cast<float>(1.0 / n);
  for (size_t i = 0; i < kCount; i++) {
    double avg = 0;
    for (int r = 0; r < n; r++) avg += static_cast<float>(value(r, i) * inverse);
    if (std::abs(out[i] - avg) > 1e-6 + 1e-5 * std::abs(avg))
      return ctx.fail("float avg: element " + std::to_string(i) + " is " + std::to_string(out[i]) +
                      ", expected " + std::to_string(avg));
  }
  ncclCommDestroy(comm);
}

// The bytes all ranks together sent to the other host during one collective, as a multiple of
// the message size S: the ring moves (n-1)/n S per rank per pass (two passes for allreduce);
// with the hosts' ranks consecutive, 2 of its n hops cross.
double crossHostMessages(const RunReport& report, const std::string& key, size_t bytes) {
  uint64_t total = 0;
  for (const std::string& v : report.valuesOf(key)) total += std::stoull(v);
  return static_cast<double>(total) / static_cast<double>(bytes);
}

RunReport runRing(Placement placement, const std::string& ringOrder,
                  const std::string& algo = "allreduce:ring;reducescatter:ring;allgather:ring",
                  const std::string& connect = "auto", int hosts = 2, int ranks = kRanks,
                  const std::string& rings = "2") {
  NamespaceOptions options;
  options.namespaces = hosts;
  options.placement = placement;
  options.timeoutS = 90;
  options.env = {{"NCCL_ALGO", algo},
                 {"BRAID_RING_ORDER", ringOrder},
                 {"BRAID_CONNECT", connect},
                 {"BRAID_RINGS", rings},
                 {"BRAID_TIMEOUT_S", "30"}};
  return runInNamespaces(ranks, ringCollectives, options);
}

RunReport runHierarchical(int hosts, int ranks, Placement placement, const char* algo) {
  NamespaceOptions options;
  options.namespaces = hosts;
  options.placement = placement;
  options.timeoutS = 120;
  options.env = {{"BRAID_TIMEOUT_S", "30"}};
  if (algo) options.env.push_back({"NCCL_ALGO", algo});
  // The tuner's own choice is judged on the built-in costs: constants measured at init (and
  // cached per machine) on a loaded machine can rank shared memory no faster than TCP.
  if (!algo) options.env.push_back({"BRAID_TUNER_CALIBRATE", "0"});
  return runInNamespaces(ranks, allReduceOnHosts, options);
}

void expectCrossings(const RunReport& report, double hops) {
  const double s = kCount * 4.0, block = (kCount / kRanks) * 4.0 * kRanks;
  const double pass = (kRanks - 1.0) / kRanks;  // of the message, per hop
  // Chunk rounding moves a few more bytes than the model: 1% slack.
  EXPECT_NEAR(crossHostMessages(report, "allreduce", size_t(s)), 2 * pass * hops, 0.01 * hops);
  EXPECT_NEAR(crossHostMessages(report, "reducescatter", size_t(block)), pass * hops, 0.01 * hops);
  EXPECT_NEAR(crossHostMessages(report, "allgather", size_t(block)), pass * hops, 0.01 * hops);
}

TEST(TopologyRing, InterleavedRanksCrossTheNetworkTwice) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report = runRing(Placement::kRoundRobin, "host");
  BRAID_ASSERT_ALL_RANKS_OK(report);
  if (!isNamespaceChild()) expectCrossings(report, 2);
}

TEST(TopologyRing, BlockedRanksCrossTheNetworkTwice) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report = runRing(Placement::kBlocks, "host");
  BRAID_ASSERT_ALL_RANKS_OK(report);
  if (!isNamespaceChild()) expectCrossings(report, 2);
}

// The ring allreduce, reduce-scatter and allgather of a large message run two rings, the second
// with each host's ranks in reverse order: each ring's hops between hosts leave from another rank
// of the host, so every rank sends its ring's share across, (n-1)/n of half the message per pass.
// With one ring (BRAID_RINGS=1) one rank of each host sends it all, twice as much, and the other
// nothing. The bytes crossing in all are the same, and the result exact, either way (3 hosts of 2
// included). The broadcast and reduce chains run half on each ring too: rank by rank, the bytes
// they send across are those of both rings' chains (ring_traffic.h), not of the first's alone.
TEST(TopologyRing, TwoRingsSendToOtherHostsFromEveryRank) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  const double s = kCount * 4.0, pass = (kRanks - 1.0) / kRanks;
  for (const char* rings : {"2", "1"}) {
    RunReport report =
        runRing(Placement::kRoundRobin, "host",
                "allreduce:ring;reducescatter:ring;allgather:ring;broadcast:ring;reduce:ring",
                "auto", 2, kRanks, rings);
    BRAID_ASSERT_ALL_RANKS_OK(report);
    if (isNamespaceChild()) continue;
    std::vector<double> each;
    for (const std::string& v : report.valuesOf("allreduce")) each.push_back(std::stod(v) / s);
    ASSERT_EQ(each.size(), size_t(kRanks));
    std::sort(each.begin(), each.end());
    const bool two = std::string(rings) == "2";
    for (int r = 0; r < kRanks; r++) {
      const double want = two ? pass : r < kRanks / 2 ? 0 : 2 * pass;
      EXPECT_NEAR(each[r], want, 0.01) << rings << " ring(s), rank " << r << " of the sorted";
    }
    EXPECT_NEAR(crossHostMessages(report, "allreduce", size_t(s)), 4 * pass, 0.04) << rings;
    // Reduce-scatter and allgather of 1 MB blocks: every rank sends n-1 half blocks across on
    // the ring where its hop crosses, against n-1 whole blocks from half the ranks with one ring.
    const double block = static_cast<double>(kCount / kRanks) * 4.0;
    for (const char* coll : {"reducescatter", "allgather"}) {
      std::vector<double> blocks;
      for (const std::string& v : report.valuesOf(coll)) blocks.push_back(std::stod(v) / block);
      ASSERT_EQ(blocks.size(), size_t(kRanks)) << coll;
      std::sort(blocks.begin(), blocks.end());
      for (int r = 0; r < kRanks; r++) {
        const double want = two ? (kRanks - 1) / 2.0 : r < kRanks / 2 ? 0 : kRanks - 1.0;
        EXPECT_NEAR(blocks[r], want, 0.01)
            << coll << ", " << rings << " ring(s), rank " << r << " of the sorted";
      }
    }
    // Broadcast (from rank 3) and reduce (to rank 1) of the whole message: rank by rank, what
    // the chains cross with half on each ring (every rank but one sends half across), or with
    // all on one (ring_traffic.h).
    std::vector<int> hostOf(kRanks);
    for (int r = 0; r < kRanks; r++) hostOf[r] = r % 2;
    for (const char* coll : {"broadcast", "reduce"}) {
      const bool reduce = std::string(coll) == "reduce";
      const std::vector<double> want =
          ringChainToOtherHosts(hostOf, reduce ? 1 : kRanks - 1, reduce, two);
      ASSERT_EQ(report.ranks.size(), size_t(kRanks)) << coll;
      for (const RankResult& rank : report.ranks) {
        EXPECT_EQ(rank.values.at(std::string(coll) + ".algorithm"), "Ring") << coll;
        EXPECT_NEAR(std::stod(rank.values.at(coll)) / s, want.at(rank.rank), 0.01)
            << coll << ", " << rings << " ring(s), rank " << rank.rank;
      }
    }
  }
  RunReport three = runRing(Placement::kBlocks, "host", "allreduce:ring", "auto", 3, 6);
  BRAID_ASSERT_ALL_RANKS_OK(three);
  if (isNamespaceChild()) return;
  // 6 ranks on 3 hosts: each ring crosses 3 times, (n-1)/n of half the message per pass.
  EXPECT_NEAR(crossHostMessages(three, "allreduce", size_t(s)), 2 * 3 * 5.0 / 6, 0.05);
  for (const std::string& v : three.valuesOf("allreduce"))
    EXPECT_NEAR(std::stod(v) / s, 5.0 / 6, 0.01);
}

TEST(TopologyRing, RankOrderedRingOverInterleavedRanksCrossesAtEveryHop) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report = runRing(Placement::kRoundRobin, "rank");
  BRAID_ASSERT_ALL_RANKS_OK(report);
  if (!isNamespaceChild()) expectCrossings(report, kRanks);
}

// 2 hosts x 2 ranks: each rank all-reduces half the message with its counterpart, so the
// ranks together send the message once across (against 1.5 times for the host-ordered ring).
TEST(Hierarchical, InterleavedRanksExactAndCrossingOnce) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report = runHierarchical(2, 4, Placement::kRoundRobin, "allreduce:Hierarchical");
  BRAID_ASSERT_ALL_RANKS_OK(report);
  if (!isNamespaceChild()) {
    EXPECT_NEAR(crossHostMessages(report, "allreduce", kCount * 4), 2.0, 0.02);
  }
}

// The hierarchical allreduce, reduce-scatter and allgather at 2 hosts x 2 ranks, interleaved
// and in blocks: every rank exchanges with its counterpart only, (H-1)/H of its data per pass,
// so the ranks together send 4/3 of what the host-ordered ring's two crossing hops carry.
TEST(Hierarchical, EveryCollectiveCrossesAThirdLessThanTheRing) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  const char* algo = "allreduce:hierarchical;reducescatter:hierarchical;allgather:hierarchical";
  for (Placement placement : {Placement::kRoundRobin, Placement::kBlocks}) {
    RunReport report = runRing(placement, "host", algo);
    BRAID_ASSERT_ALL_RANKS_OK(report);
    if (!isNamespaceChild()) expectCrossings(report, 4.0 / 3);
  }
}

// The allreduce, reduce-scatter and allgather need only the rings within hosts and between
// counterparts, which init connects as neighbours at any size: they run with no other pair
// connected (3 hosts of 2, where the neighbours are not every pair).
TEST(Hierarchical, RunsOnNeighbourConnectionsAlone) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report =
      runRing(Placement::kRoundRobin, "host",
              "allreduce:hierarchical;reducescatter:hierarchical;allgather:hierarchical",
              "neighbours", 3, 6);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  if (isNamespaceChild()) return;
  for (const char* coll : {"allreduce", "reducescatter", "allgather"}) {
    for (const std::string& ran : report.valuesOf(std::string(coll) + ".algorithm")) {
      EXPECT_EQ(ran, "Hierarchical") << coll;
    }
  }
}

// The tuner takes it by itself for large messages where the ranks are on several hosts, as many
// on each.
TEST(Hierarchical, ChosenByTheTunerForBlockedRanks) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report = runHierarchical(2, 4, Placement::kBlocks, nullptr);
  BRAID_ASSERT_ALL_RANKS_OK(report);
}

// 3 hosts x 2 ranks (6 ranks, odd host count): a ring of 3 between hosts.
TEST(Hierarchical, ThreeHostsOfTwo) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport report = runHierarchical(3, 6, Placement::kRoundRobin, "allreduce:Hierarchical");
  BRAID_ASSERT_ALL_RANKS_OK(report);
  // Each host's 2 ranks send 2 (3-1)/3 of half the message each: 4/3 S per host, 4 S in all.
  if (!isNamespaceChild()) {
    EXPECT_NEAR(crossHostMessages(report, "allreduce", kCount * 4), 4.0, 0.04);
  }
}

// The hierarchical allreduce with a double binary tree between hosts: each local rank's slice
// goes up and down two trees over the hosts, H-1 edges each, so the ranks together send
// 2 (H-1) messages across, as the ring between hosts does (2 at 2 hosts, 4 at 3).
TEST(Hierarchical, TreeBetweenHostsExactAndCrossingAsTheRing) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport two = runHierarchical(2, 4, Placement::kRoundRobin, "allreduce:HierarchicalTree");
  BRAID_ASSERT_ALL_RANKS_OK(two);
  RunReport three = runHierarchical(3, 6, Placement::kRoundRobin, "allreduce:HierarchicalTree");
  BRAID_ASSERT_ALL_RANKS_OK(three);
  if (!isNamespaceChild()) {
    EXPECT_NEAR(crossHostMessages(two, "allreduce", kCount * 4), 2.0, 0.02);
    EXPECT_NEAR(crossHostMessages(three, "allreduce", kCount * 4), 4.0, 0.04);
  }
}

// The tree across hosts (a double binary tree over the hosts, a chain within each): each tree
// crosses between hosts on H-1 edges, each carrying its half of the message up and back down,
// so the ranks together send 2 (H-1) messages across; the tree over ring positions it replaced
// crossed on two edges per tree at 2 hosts of 2 (4 messages).
TEST(TopologyTree, EachTreeCrossesOncePerHostEdge) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  RunReport two = runHierarchical(2, 4, Placement::kRoundRobin, "allreduce:Tree");
  BRAID_ASSERT_ALL_RANKS_OK(two);
  RunReport three = runHierarchical(3, 6, Placement::kBlocks, "allreduce:Tree");
  BRAID_ASSERT_ALL_RANKS_OK(three);
  if (!isNamespaceChild()) {
    EXPECT_NEAR(crossHostMessages(two, "allreduce", kCount * 4), 2.0, 0.02);
    EXPECT_NEAR(crossHostMessages(three, "allreduce", kCount * 4), 4.0, 0.04);
  }
}

}  // namespace
}  // namespace braid::test
