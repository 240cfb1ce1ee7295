// Broadcast, Reduce, AllGather and ReduceScatter against exact expectations: every dtype, the
// ops that apply, roots first/middle/last, counts 0/1/7/prime/multi-chunk, in-place and
// out-of-place, on ranks as threads (same-process and TCP transports) and as processes (shm).
// Inputs are integers whose every partial result is exact in the dtype (the shared generator of
// verifiable/), so each element of each rank's output must equal the exact float64 expectation
// bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "collectives/collective_sweep.h"
#include "comm/communicator.h"
#include "harness/rank_harness.h"
#include "harness/ring_traffic.h"
#include "oracle/case_buffer.h"
#include "oracle/dtype_codec.h"
#include "verifiable/exact_inputs.h"

namespace {

using braid::collectives::preAndPostOps;
using braid::collectives::sweep;
using braid::collectives::sweepOn;
using braid::oracle::Registration;
using braid::test::RankContext;

const std::vector<std::pair<std::string, std::string>> kSmallSlots = {{"BRAID_SLOT_BYTES", "4096"},
                                                                      {"BRAID_TIMEOUT_S", "60"}};

braid::test::RunOptions options(std::vector<std::pair<std::string, std::string>> env) {
  braid::test::RunOptions o;
  o.timeoutS = 300;
  o.env = std::move(env);
  return o;
}

TEST(Collectives, ThreadsLocalTransport) {
  for (int n : {1, 2, 3, 5}) {
    auto report = braid::test::runThreads(
        n, [](RankContext& ctx) { sweep(ctx, false); }, options(kSmallSlots));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(Collectives, ThreadsTcpTransport) {
  auto env = kSmallSlots;
  env.push_back({"BRAID_TRANSPORTS", "tcp"});
  for (int n : {2, 3}) {
    auto report = braid::test::runThreads(
        n, [](RankContext& ctx) { sweep(ctx, true); }, options(env));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(Collectives, ProcessesSharedMemory) {
  for (int n : {2, 4}) {
    auto report = braid::test::runProcesses(
        n, [](RankContext& ctx) { sweep(ctx, true); }, options(kSmallSlots));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

// The logarithmic algorithms, forced: tree broadcast, Bruck allgather and reduce-scatter. Rank
// counts cover powers of two and the ones where Bruck's last step moves fewer blocks (3, 5, 6).
const char* const kLogarithmic = "broadcast:tree;allgather:bruck;reducescatter:bruck";

TEST(Collectives, LogarithmicAlgorithmsThreads) {
  auto env = kSmallSlots;
  env.push_back({"NCCL_ALGO", kLogarithmic});
  for (int n : {2, 3, 4, 5, 6, 8}) {
    // Every op and the multi-chunk count at 5 ranks; the sums at small counts elsewhere.
    bool small = n != 5;
    auto report = braid::test::runThreads(
        n, [small](RankContext& ctx) { sweep(ctx, small); }, options(env));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(Collectives, LogarithmicAlgorithmsProcessesAndTcp) {
  auto env = kSmallSlots;
  env.push_back({"NCCL_ALGO", kLogarithmic});
  auto report = braid::test::runProcesses(
      3, [](RankContext& ctx) { sweep(ctx, true); }, options(env));
  BRAID_EXPECT_ALL_RANKS_OK(report);
  env.push_back({"BRAID_TRANSPORTS", "tcp"});
  report = braid::test::runThreads(
      5, [](RankContext& ctx) { sweep(ctx, true); }, options(env));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// A broadcast from the last rank and a reduce to rank 1 of kChainCount int32 elements (many
// slots): reports the bytes each sent to ranks on other hosts ("broadcast", "reduce").
constexpr size_t kChainCount = 100003;
void ringChainTraffic(RankContext& ctx, ncclComm_t comm) {
  const int n = ctx.nranks();
  std::vector<int32_t> in(kChainCount, ctx.rank()), out(kChainCount);
  braidTraffic_t before{}, after{};
  braidCommGetTraffic(comm, &before);
  if (ncclBroadcast(in.data(), out.data(), kChainCount, ncclInt32, n - 1, comm, nullptr) !=
          ncclSuccess ||
      out.front() != n - 1 || out.back() != n - 1)
    return ctx.fail(std::string("large broadcast: ") + ncclGetLastError(comm));
  braidCommGetTraffic(comm, &after);
  ctx.report("broadcast", std::to_string(after.bytesToOtherHosts - before.bytesToOtherHosts));
  before = after;
  if (ncclReduce(in.data(), out.data(), kChainCount, ncclInt32, ncclSum, 1, comm, nullptr) !=
          ncclSuccess ||
      (ctx.rank() == 1 && (out.front() != n * (n - 1) / 2 || out.back() != n * (n - 1) / 2)))
    return ctx.fail(std::string("large reduce: ") + ncclGetLastError(comm));
  braidCommGetTraffic(comm, &after);
  ctx.report("reduce", std::to_string(after.bytesToOtherHosts - before.bytesToOtherHosts));
}

// Schedules across hosts, forced, on processes that NCCL_HOSTID splits into hosts (shared
// memory within a host, TCP over loopback between hosts): hosts of 2 and 3 ranks, numbered host
// by host and interleaved, 2 and 3 hosts; every dtype, every op at the larger shapes, the roots
// first, middle and last (on different hosts and local indices).
void sweepOnHosts(int hosts, int nranks, bool interleaved, bool small, const char* algorithm) {
  auto env = kSmallSlots;
  const std::string a = algorithm;
  env.push_back(
      {"NCCL_ALGO", "broadcast:" + a + ";reduce:" + a + ";allgather:" + a + ";reducescatter:" + a});
  env.push_back({"NCCL_SOCKET_IFNAME", "lo"});
  // Rank 0 hosts the rendezvous, so the parent starts no bootstrap thread before it forks the
  // ranks: a fork while another thread holds one of ASan's allocator locks leaves the child
  // waiting on it forever (seen here under ASan, where the TCP pumps' first 8 KiB buffers
  // took the lock the parent's root thread held).
  env.push_back({"NCCL_COMM_ID", "127.0.0.1:" + std::to_string(braid::test::freeLocalPort())});
  auto o = options(env);
  o.idFromEnvironment = true;
  auto report = braid::test::runProcesses(
      nranks,
      [=](RankContext& ctx) {
        const int r = ctx.rank(), host = interleaved ? r % hosts : r / (nranks / hosts);
        setenv("NCCL_HOSTID", ("emulated-host-" + std::to_string(host)).c_str(), 1);
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        sweepOn(ctx, comm, small, Registration::kNone, algorithm);
        preAndPostOps(ctx, comm);
        if (a == "Ring") ringChainTraffic(ctx, comm);
        ncclCommDestroy(comm);
      },
      o);
  BRAID_EXPECT_ALL_RANKS_OK(report) << hosts << " hosts of " << nranks / hosts << " ranks"
                                    << (interleaved ? ", interleaved" : ", blocks");
  if (a != "Ring" || !report.ok()) return;
  std::vector<int> hostOf(nranks);
  for (int r = 0; r < nranks; r++) hostOf[r] = interleaved ? r % hosts : r / (nranks / hosts);
  for (const char* coll : {"broadcast", "reduce"}) {
    const bool reduce = std::string(coll) == "reduce";
    const std::vector<double> want =
        braid::test::ringChainToOtherHosts(hostOf, reduce ? 1 : nranks - 1, reduce, true);
    for (const braid::test::RankResult& rank : report.ranks)
      EXPECT_NEAR(std::stod(rank.values.at(coll)) / (kChainCount * 4.0), want.at(rank.rank), 0.01)
          << coll << " to other hosts from rank " << rank.rank << ", " << hosts << " hosts of "
          << nranks / hosts << " ranks" << (interleaved ? ", interleaved" : ", blocks");
  }
}

TEST(Collectives, HierarchicalTwoHostsOfTwo) {
  sweepOnHosts(2, 4, true, false, "Hierarchical");
  sweepOnHosts(2, 4, false, true, "Hierarchical");
}

TEST(Collectives, HierarchicalThreeHostsAndHostsOfThree) {
  sweepOnHosts(3, 6, false, true, "Hierarchical");
  sweepOnHosts(2, 6, true, true, "Hierarchical");
}

// The rings across hosts: allgather and reduce-scatter blocks, broadcasts and reduces of a slot
// (4 KiB here) or more go half on each of two rings (ring_schedules.h: twoRingsPay), 1031
// four-byte elements split 512 + 519, in place and out of place, every root. A larger broadcast
// and reduce then show, rank by rank, the bytes both rings' chains send to other hosts.
TEST(Collectives, RingsAcrossHosts) {
  sweepOnHosts(2, 4, true, false, "Ring");
  sweepOnHosts(3, 6, false, true, "Ring");
}

// Zero-copy allgather and reduce-scatter from registered ncclMemAlloc buffers (from 1 byte up
// here), and the fallback to the FIFOs when only some ranks registered.
std::vector<std::pair<std::string, std::string>> zeroCopyEnv() {
  auto env = kSmallSlots;
  env.push_back({"NCCL_ALGO", "allgather:zerocopy;reducescatter:zerocopy"});
  env.push_back({"BRAID_ZERO_COPY_MIN_BYTES", "1"});
  return env;
}

TEST(Collectives, ZeroCopyThreads) {
  for (int n : {2, 3, 5}) {
    auto report = braid::test::runThreads(
        n, [n](RankContext& ctx) { sweep(ctx, n != 3, Registration::kRegister); },
        options(zeroCopyEnv()));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(Collectives, ZeroCopyProcesses) {
  for (int n : {3, 4}) {
    auto report = braid::test::runProcesses(
        n, [](RankContext& ctx) { sweep(ctx, true, Registration::kRegister); },
        options(zeroCopyEnv()));
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
  auto report = braid::test::runProcesses(
      3, [](RankContext& ctx) { sweep(ctx, true, Registration::kEvenRanks); },
      options(zeroCopyEnv()));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// NCCL_PROTO takes NCCL_ALGO's per-collective syntax. Reduce has one protocol, Simple: specs that
// allow it run (and give exact results), a spec that rules it out for a collective fails that
// collective with a message naming the variable, and leaves the communicator usable.
TEST(Collectives, NcclProtoPerCollective) {
  auto env = kSmallSlots;
  env.push_back({"NCCL_PROTO", "allreduce:LL,Simple;broadcast:^LL128;reduce:LL"});
  auto report = braid::test::runThreads(
      3,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        std::vector<int32_t> v(1009), out(1009, -1);
        for (size_t i = 0; i < v.size(); i++) v[i] = static_cast<int32_t>(i) + ctx.rank();
        if (ncclAllReduce(v.data(), out.data(), v.size(), ncclInt32, ncclSum, comm, nullptr) !=
            ncclSuccess)
          ctx.fail(std::string("allreduce: ") + ncclGetLastError(comm));
        for (size_t i = 0; i < v.size(); i++)
          if (out[i] != static_cast<int32_t>(3 * i + 3)) {
            ctx.fail("allreduce element " + std::to_string(i) + " = " + std::to_string(out[i]));
            break;
          }
        ncclResult_t r =
            ncclReduce(v.data(), out.data(), v.size(), ncclInt32, ncclSum, 0, comm, nullptr);
        std::string text = ncclGetLastError(comm);
        if (r != ncclInvalidUsage || text.find("NCCL_PROTO") == std::string::npos ||
            text.find("Reduce") == std::string::npos)
          ctx.fail("reduce with NCCL_PROTO=reduce:LL returned " + std::to_string(r) + ": " + text);
        std::fill(out.begin(), out.end(), -1);
        if (ncclBroadcast(v.data(), out.data(), v.size(), ncclInt32, 1, comm, nullptr) !=
            ncclSuccess)
          ctx.fail(std::string("broadcast: ") + ncclGetLastError(comm));
        for (size_t i = 0; i < v.size(); i++)
          if (out[i] != static_cast<int32_t>(i) + 1) {
            ctx.fail("broadcast element " + std::to_string(i) + " = " + std::to_string(out[i]));
            break;
          }
        ncclCommDestroy(comm);
      },
      options(env));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// NCCL_PROTO's LL is the low-latency mailbox allreduce: "allreduce:LL" runs a small allreduce
// with it and refuses one larger than a mailbox entry; "^LL" keeps every allreduce off it.
void allreduceWithProto(RankContext& ctx, size_t count, const char* wantAlgorithm) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  std::vector<int32_t> v(count), out(count, -1);
  for (size_t i = 0; i < count; i++) v[i] = static_cast<int32_t>(i) + ctx.rank();
  ncclResult_t r = ncclAllReduce(v.data(), out.data(), count, ncclInt32, ncclSum, comm, nullptr);
  char name[32] = "";
  braidCommLastAlgorithm(comm, name, sizeof(name));
  if (!wantAlgorithm) {
    std::string text = ncclGetLastError(comm);
    if (r != ncclInvalidUsage || text.find("NCCL_PROTO=allreduce:LL") == std::string::npos)
      ctx.fail("allreduce of " + std::to_string(count) + " returned " + std::to_string(r) + ": " +
               text);
  } else if (r != ncclSuccess) {
    ctx.fail(std::string("allreduce: ") + ncclGetLastError(comm));
  } else {
    for (size_t i = 0; i < count; i++)
      if (out[i] != static_cast<int32_t>(3 * i + 3)) {
        ctx.fail("element " + std::to_string(i) + " = " + std::to_string(out[i]));
        break;
      }
    if ((std::string(wantAlgorithm) == "LowLatency") != (std::string(name) == "LowLatency"))
      ctx.fail(std::string("ran ") + name + ", expected " + wantAlgorithm);
  }
  ncclCommDestroy(comm);
}

TEST(Collectives, NcclProtoLLIsTheMailboxAllReduce) {
  struct Case {
    const char* proto;
    size_t count;
    const char* want;  ///< "LowLatency", "other" or nullptr (refused)
  };
  for (Case c : {Case{"allreduce:LL", 1016, "LowLatency"}, Case{"allreduce:LL", 1017, nullptr},
                 Case{"allreduce:^LL", 7, "other"}, Case{"Simple", 1, "other"}}) {
    auto env = kSmallSlots;
    env.push_back({"NCCL_PROTO", c.proto});
    auto report = braid::test::runThreads(
        3, [&c](RankContext& ctx) { allreduceWithProto(ctx, c.count, c.want); }, options(env));
    BRAID_EXPECT_ALL_RANKS_OK(report) << c.proto << " count " << c.count;
  }
}

}  // namespace
