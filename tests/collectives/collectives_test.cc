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
#include "comm/communicator.h"
#include "harness/rank_harness.h"
#include "oracle/case_buffer.h"
#include "oracle/dtype_codec.h"
#include "verifiable/exact_inputs.h"

namespace {

using braid::oracle::CaseBuffer;
using braid::oracle::DTypeInfo;
using braid::oracle::dtypeInfo;
using braid::oracle::Registration;
using braid::test::RankContext;

enum class Coll { kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* collName(Coll c) {
  static const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  return names[static_cast<int>(c)];
}

// Every rank's inputs: the shared generator's (verifiable/exact_inputs.h), small enough that
// every partial sum or product is exactly representable in the dtype.
braid::verifiable::ExactInputs inputsOf(ncclDataType_t dtype, ncclRedOp_t op, int nranks) {
  return braid::verifiable::ExactInputs(braid::verifiable::InputSpec{
      dtype, static_cast<braid::verifiable::Reduction>(op), nranks, 17});
}

uint64_t encode(const DTypeInfo& t, double v) {
  if (t.isFloat) return braid::oracle::encodeFloat(t, v);
  return braid::oracle::maskBits(t, static_cast<uint64_t>(static_cast<int64_t>(v)));
}

struct Case {
  Coll coll;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  size_t count;
  int root;
  bool inPlace;
};

// Runs one case on this rank and checks every element of its output.
// `registration`: how the buffers are allocated and registered (zero-copy when every rank did).
// `algorithm`: the algorithm every call with data must have run (nullptr: any).
void runCase(RankContext& ctx, ncclComm_t comm, const Case& c, Registration registration,
             const char* algorithm = nullptr) {
  const DTypeInfo& t = dtypeInfo(c.dtype);
  const int n = ctx.nranks(), me = ctx.rank();
  const bool gathers = c.coll == Coll::kAllGather, scatters = c.coll == Coll::kReduceScatter;
  const size_t inCount = scatters ? c.count * n : c.count;
  const size_t outCount = gathers ? c.count * n : c.count;
  CaseBuffer in(comm, me, std::max<size_t>(1, inCount) * t.size, registration);
  const size_t outBytes = std::max<size_t>(1, std::max(inCount, outCount)) * t.size;
  CaseBuffer out(comm, me, outBytes, registration);
  if (!in.error().empty() || !out.error().empty())
    return ctx.fail("buffers: " + in.error() + out.error());
  for (size_t i = 0; i < outBytes / t.size; i++)
    braid::oracle::storeElement(t, out.data(), i, t.poison);
  const braid::verifiable::ExactInputs inputs = inputsOf(c.dtype, c.op, n);
  auto value = [&](int r, size_t i) { return inputs.value(r, i); };
  for (size_t i = 0; i < inCount; i++)
    braid::oracle::storeElement(t, in.data(), i, encode(t, value(me, i)));

  const void* send = in.data();
  void* recv = out.data();
  if (c.inPlace) {
    // NCCL's in-place conventions: the rank's block of the larger buffer.
    if (gathers) {
      memcpy(out.data() + me * c.count * t.size, in.data(), c.count * t.size);
      send = out.data() + me * c.count * t.size;
    } else {
      memcpy(out.data(), in.data(), inCount * t.size);
      send = out.data();
      recv = scatters ? out.data() + me * c.count * t.size : out.data();
    }
  }
  const uint64_t zeroCopyBefore = comm->ops.zeroCopyRuns;
  ncclResult_t r = ncclSuccess;
  switch (c.coll) {
    case Coll::kBroadcast:
      r = ncclBroadcast(send, recv, c.count, c.dtype, c.root, comm, nullptr);
      break;
    case Coll::kReduce:
      r = ncclReduce(send, recv, c.count, c.dtype, c.op, c.root, comm, nullptr);
      break;
    case Coll::kAllGather:
      r = ncclAllGather(send, recv, c.count, c.dtype, comm, nullptr);
      break;
    case Coll::kReduceScatter:
      r = ncclReduceScatter(send, recv, c.count, c.dtype, c.op, comm, nullptr);
      break;
  }
  std::string what = std::string(collName(c.coll)) + " " + t.name + " op " + std::to_string(c.op) +
                     " count " + std::to_string(c.count) + " root " + std::to_string(c.root) +
                     (c.inPlace ? " in-place" : " out-of-place");
  if (r != ncclSuccess) {
    ctx.fail(what + ": " + ncclGetErrorString(r) + ": " + ncclGetLastError(comm));
    return;
  }
  const bool wantZeroCopy =
      registration == Registration::kRegister && n > 1 && c.count > 0 && (gathers || scatters);
  if (registration != Registration::kNone &&
      (comm->ops.zeroCopyRuns > zeroCopyBefore) != wantZeroCopy)
    ctx.fail(what + (wantZeroCopy ? ": registered buffers were not read in place"
                                  : ": ran zero-copy without registered buffers on every rank"));
  char ran[32] = "";
  braidCommLastAlgorithm(comm, ran, sizeof(ran));
  if (algorithm && c.count > 0 && std::string(ran) != algorithm)
    ctx.fail(what + ": ran " + ran + ", not " + algorithm);
  if (c.coll == Coll::kReduce && me != c.root) return;  // only the root's output is defined
  const unsigned char* result = static_cast<const unsigned char*>(recv);
  for (size_t i = 0; i < outCount; i++) {
    double expect;
    if (c.coll == Coll::kBroadcast) {
      expect = value(c.root, i);
    } else if (gathers) {
      expect = value(static_cast<int>(i / c.count), i % c.count);
    } else {
      expect = inputs.reduced(scatters ? me * c.count + i : i);
    }
    uint64_t got = braid::oracle::loadElement(t, result, i), want = encode(t, expect);
    if (got != want) {
      ctx.fail(what + ": element " + std::to_string(i) + " is " +
               braid::oracle::describeElement(t, got) + ", expected " +
               braid::oracle::describeElement(t, want));
      return;
    }
  }
}

void sweepOn(RankContext& ctx, ncclComm_t comm, bool small, Registration registration,
             const char* algorithm) {
  const int n = ctx.nranks();
  std::vector<size_t> counts = {0, 1, 7, 1031};
  if (!small) counts.push_back(5000);  // several 4 KiB slots
  std::vector<int> roots = {0, n / 2, n - 1};
  for (Coll coll : {Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter}) {
    bool reduces = coll == Coll::kReduce || coll == Coll::kReduceScatter;
    bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
    for (int d = 0; d < braid::oracle::kNumDTypes; d++) {
      std::vector<ncclRedOp_t> ops = {ncclSum};
      if (reduces && !small) ops = {ncclSum, ncclProd, ncclMax, ncclMin};
      for (ncclRedOp_t op : ops)
        for (size_t count : counts)
          for (int root : rooted ? roots : std::vector<int>{0})
            for (bool inPlace : {false, true})
              runCase(ctx, comm,
                      Case{coll, static_cast<ncclDataType_t>(d), op, count, root, inPlace},
                      registration, algorithm);
    }
  }
}

void sweep(RankContext& ctx, bool small, Registration registration = Registration::kNone) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  sweepOn(ctx, comm, small, registration, nullptr);
  ncclCommDestroy(comm);
}

// The ops whose pre- and post-steps a schedule of several phases must apply exactly once:
// int32 avg (the total divided once, truncated) and premulsum (the scalar once per rank), for
// Reduce at every root and ReduceScatter, every element against the exact sum.
void preAndPostOps(RankContext& ctx, ncclComm_t comm) {
  const int n = ctx.nranks(), me = ctx.rank();
  int32_t scalar = 3;
  ncclRedOp_t premul;
  if (ncclRedOpCreatePreMulSum(&premul, &scalar, ncclInt32, ncclScalarHostImmediate, comm) !=
      ncclSuccess)
    return ctx.fail(std::string("ncclRedOpCreatePreMulSum: ") + ncclGetLastError(comm));
  auto input = [](int r, size_t i) { return static_cast<int32_t>((i * 7 + 3) % 1009) - r * 5; };
  for (ncclRedOp_t op : {ncclAvg, premul})
    for (size_t count : {size_t(7), size_t(5003)})
      for (int root = -1; root < n; root++) {  // -1: ReduceScatter
        const size_t inCount = root < 0 ? count * n : count;
        std::vector<int32_t> in(inCount), out(count, INT32_MIN);
        for (size_t i = 0; i < inCount; i++) in[i] = input(me, i);
        ncclResult_t r =
            root < 0 ? ncclReduceScatter(in.data(), out.data(), count, ncclInt32, op, comm, nullptr)
                     : ncclReduce(in.data(), out.data(), count, ncclInt32, op, root, comm, nullptr);
        const std::string what = std::string(root < 0 ? "ReduceScatter" : "Reduce") + " op " +
                                 std::to_string(op) + " count " + std::to_string(count) + " root " +
                                 std::to_string(root);
        if (r != ncclSuccess) return ctx.fail(what + ": " + ncclGetLastError(comm));
        if (root >= 0 && root != me) continue;
        for (size_t i = 0; i < count; i++) {
          const size_t at = root < 0 ? me * count + i : i;
          int64_t sum = 0;
          for (int q = 0; q < n; q++) sum += (op == premul ? scalar : 1) * input(q, at);
          const int32_t want = static_cast<int32_t>(op == ncclAvg ? sum / n : sum);
          if (out[i] != want)
            return ctx.fail(what + ": element " + std::to_string(i) + " is " +
                            std::to_string(out[i]) + ", expected " + std::to_string(want));
        }
      }
  ncclRedOpDestroy(premul, comm);
}

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

// The hierarchical schedules, forced, on processes that NCCL_HOSTID splits into hosts (shared
// memory within a host, TCP over loopback between hosts): hosts of 2 and 3 ranks, numbered host
// by host and interleaved, 2 and 3 hosts; every dtype, every op at the larger shapes, the roots
// first, middle and last (on different hosts and local indices).
void hierarchicalOnHosts(int hosts, int nranks, bool interleaved, bool small) {
  auto env = kSmallSlots;
  env.push_back({"NCCL_ALGO",
                 "broadcast:hierarchical;reduce:hierarchical;allgather:hierarchical;"
                 "reducescatter:hierarchical"});
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
        sweepOn(ctx, comm, small, Registration::kNone, "Hierarchical");
        preAndPostOps(ctx, comm);
        ncclCommDestroy(comm);
      },
      o);
  BRAID_EXPECT_ALL_RANKS_OK(report) << hosts << " hosts of " << nranks / hosts << " ranks"
                                    << (interleaved ? ", interleaved" : ", blocks");
}

TEST(Collectives, HierarchicalTwoHostsOfTwo) {
  hierarchicalOnHosts(2, 4, true, false);
  hierarchicalOnHosts(2, 4, false, true);
}

TEST(Collectives, HierarchicalThreeHostsAndHostsOfThree) {
  hierarchicalOnHosts(3, 6, false, true);
  hierarchicalOnHosts(2, 6, true, true);
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
