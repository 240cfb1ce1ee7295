#include "collectives/collective_sweep.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "comm/communicator.h"
#include "oracle/dtype_codec.h"
#include "verifiable/exact_inputs.h"

namespace braid::collectives {
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

}  // namespace

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

void sweep(RankContext& ctx, bool small, Registration registration) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  sweepOn(ctx, comm, small, registration, nullptr);
  ncclCommDestroy(comm);
}

// The ops whose pre- and post-steps a schedule of several phases must apply exactly once:
// int32 avg (the total divided once, truncated), premulsum (the scalar once per rank) and float
// avg (NCCL's: each rank's input times (float)(1/n), once), for Reduce at every root and
// ReduceScatter, every element against the exact result.
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
  // Float avg on the shared generator's inputs: the rounded products sum exactly in any order.
  const braid::verifiable::ExactInputs avg(
      braid::verifiable::InputSpec{ncclFloat32, braid::verifiable::Reduction::kAvg, n, 23});
  for (size_t count : {size_t(7), size_t(5003)})
    for (int root = -1; root < n; root++) {
      const size_t inCount = root < 0 ? count * n : count;
      std::vector<float> in(inCount), out(count, -1.0f);
      for (size_t i = 0; i < inCount; i++) in[i] = static_cast<float>(avg.value(me, i));
      ncclResult_t r =
          root < 0
              ? ncclReduceScatter(in.data(), out.data(), count, ncclFloat32, ncclAvg, comm, nullptr)
              : ncclReduce(in.data(), out.data(), count, ncclFloat32, ncclAvg, root, comm, nullptr);
      const std::string what = std::string(root < 0 ? "ReduceScatter" : "Reduce") +
                               " float avg count " + std::to_string(count) + " root " +
                               std::to_string(root);
      if (r != ncclSuccess) return ctx.fail(what + ": " + ncclGetLastError(comm));
      if (root >= 0 && root != me) continue;
      for (size_t i = 0; i < count; i++) {
        const float want = static_cast<float>(avg.reduced(root < 0 ? me * count + i : i));
        if (out[i] != want)
          return ctx.fail(what + ": element " + std::to_string(i) + " is " +
                          std::to_string(out[i]) + ", expected " + std::to_string(want));
      }
    }
}

}  // namespace braid::collectives
