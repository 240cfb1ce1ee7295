// The P2P transport on a real GPU: several ranks on device 0, as threads of one process (device
// pointers shared) and as processes (CUDA IPC handles), run collectives on cudaMalloc'd buffers
// on their own streams, and every element is checked against a float64 reference. Skipped,
// saying why, where there is no GPU: the same rule as the kernel tests (cuda_device.h).
//
// The process tests fork before the parent touches CUDA (a forked child cannot use a CUDA
// context its parent made), so their skip rule runs in each child; ctest runs every test in a
// process of its own.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/kernels/cuda_device.h"

namespace {

using braid::test::RankContext;
using braid::test::RunOptions;
using braid::test::runProcesses;
using braid::test::runThreads;

constexpr const char* kSkipKey = "skip";

/// Small integers, so that float sums over a few ranks are exact in every order.
double value(int rank, size_t i) {
  return static_cast<double>(braid::test::deviceTestInput(rank, i) % 64);
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

/// A float or int32 device buffer filled from value(rank, i) times `scale` (poison when
/// rank < 0). From ncclMemAlloc, whose pool keeps freed blocks: cudaFree between two collectives
/// would wait for every kernel of the process, a faster rank's next collective included, which
/// waits for this rank.
template <typename T>
struct DeviceBuffer {
  DeviceBuffer(size_t n, int rank, double scale = 1) : count(n) {
    EXPECT_EQ(ncclMemAlloc(reinterpret_cast<void**>(&data), n * sizeof(T) + 16), ncclSuccess);
    std::vector<T> host(n);
    for (size_t i = 0; i < n; i++)
      host[i] = rank < 0 ? T(-77) : static_cast<T>(value(rank, i) * scale);
    EXPECT_EQ(cudaMemcpy(data, host.data(), n * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { ncclMemFree(data); }
  std::vector<T> read() const {
    std::vector<T> host(count);
    EXPECT_EQ(cudaMemcpy(host.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return host;
  }
  size_t count;
  T* data = nullptr;
};

template <typename T>
void expectValues(RankContext& ctx, const std::vector<T>& got, const std::vector<double>& want,
                  const std::string& what) {
  for (size_t i = 0; i < want.size(); i++)
    if (static_cast<double>(got[i]) != want[i]) {
      ctx.fail(what + ": element " + std::to_string(i) + " is " +
               std::to_string(static_cast<double>(got[i])) + ", expected " +
               std::to_string(want[i]));
      return;
    }
}

// AllReduce (sum, max, avg on float; sum on int32), AllGather, Broadcast, ReduceScatter and a
// send/recv ring, each on device buffers of device 0 on the rank's own stream.
void collectivesOnOneGpu(RankContext& ctx) {
  if (std::string why = braid::kernels::testing::noCudaDeviceReason(); !why.empty()) {
    ctx.report(kSkipKey, why);
    return;
  }
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(comm->team.overP2p) << "ranks on one GPU should be connected by the P2P transport";
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int n = ctx.nranks(), me = ctx.rank();
  for (size_t count : {size_t{1}, size_t{1021}, size_t{300007}}) {
    const std::string at = " count " + std::to_string(count);
    for (ncclRedOp_t op : {ncclSum, ncclMax, ncclAvg}) {
      // ncclAvg on floats is NCCL's premulsum by (float)(1/n): inputs n times the values, so
      // that each rounded product is the value again and the sum is exact in any order.
      const double scale = op == ncclAvg ? n : 1;
      const float inverse = static_cast<float>(1.0 / n);
      DeviceBuffer<float> send(count, me, scale), recv(count, -1);
      ASSERT_EQ(ncclAllReduce(send.data, recv.data, count, ncclFloat, op, comm, stream),
                ncclSuccess);
      CUDA_OK(cudaStreamSynchronize(stream));
      std::vector<double> want(count);
      for (size_t i = 0; i < count; i++) {
        double acc = op == ncclMax ? -1e300 : 0;
        for (int r = 0; r < n; r++) {
          const double x = static_cast<float>(value(r, i) * scale);
          const double term = op == ncclAvg ? static_cast<float>(x * inverse) : x;
          acc = op == ncclMax ? std::max(acc, term) : acc + term;
        }
        want[i] = acc;
      }
      expectValues(ctx, recv.read(), want, "allreduce float op " + std::to_string(op) + at);
    }
    DeviceBuffer<int32_t> ints(count, me);
    ASSERT_EQ(ncclAllReduce(ints.data, ints.data, count, ncclInt32, ncclSum, comm, stream),
              ncclSuccess);
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<double> sums(count, 0);
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++) sums[i] += value(r, i);
    expectValues(ctx, ints.read(), sums, "allreduce int32 in place" + at);

    DeviceBuffer<float> mine(count, me), all(count * n, -1);
    ASSERT_EQ(ncclAllGather(mine.data, all.data, count, ncclFloat, comm, stream), ncclSuccess);
    DeviceBuffer<float> root(count, n - 1), bcast(count, -1);
    ASSERT_EQ(ncclBroadcast(root.data, bcast.data, count, ncclFloat, n - 1, comm, stream),
              ncclSuccess);
    DeviceBuffer<float> whole(count * n, me), part(count, -1);
    ASSERT_EQ(ncclReduceScatter(whole.data, part.data, count, ncclFloat, ncclSum, comm, stream),
              ncclSuccess);
    DeviceBuffer<float> ring(count, me), fromPrev(count, -1);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(ring.data, count, ncclFloat, (me + 1) % n, comm, stream), ncclSuccess);
    ASSERT_EQ(ncclRecv(fromPrev.data, count, ncclFloat, (me + n - 1) % n, comm, stream),
              ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<double> gathered(count * n), rooted(count), block(count, 0), previous(count);
    for (int r = 0; r < n; r++)
      for (size_t i = 0; i < count; i++) gathered[r * count + i] = value(r, i);
    for (size_t i = 0; i < count; i++) {
      rooted[i] = value(n - 1, i);
      previous[i] = value((me + n - 1) % n, i);
      for (int r = 0; r < n; r++) block[i] += value(r, me * count + i);
    }
    expectValues(ctx, all.read(), gathered, "allgather" + at);
    expectValues(ctx, bcast.read(), rooted, "broadcast" + at);
    expectValues(ctx, part.read(), block, "reducescatter" + at);
    expectValues(ctx, fromPrev.read(), previous, "send/recv ring" + at);
  }
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess) << ncclGetLastError(comm);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  cudaStreamDestroy(stream);
}

void expectRanOrSkip(const braid::test::RunReport& report) {
  for (const auto& rank : report.ranks)
    if (auto it = rank.values.find(kSkipKey); it != rank.values.end()) GTEST_SKIP() << it->second;
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(P2pOnGpu, ThreeThreadRanksOnOneGpu) {
  expectRanOrSkip(runThreads(3, collectivesOnOneGpu, braid::test::deviceTestOptions()));
}

TEST(P2pOnGpu, TwoProcessRanksOnOneGpu) {
  expectRanOrSkip(runProcesses(2, collectivesOnOneGpu, braid::test::deviceTestOptions()));
}

}  // namespace
