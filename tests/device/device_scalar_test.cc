// A premulsum scalar in device memory (ncclRedOpCreatePreMulSum with ncclScalarDevice), driven by
// the fake device: read when the call runs, in stream order, over the P2P transport and staged.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"

namespace {

using braid::test::DeviceInts;
using braid::test::expectElements;
using braid::test::fakeDevice;
using braid::test::RankContext;
using braid::test::runThreads;

int32_t input(int rank, size_t i) {
  return braid::test::deviceTestInput(rank, i);
}

class DeviceScalarTest : public ::testing::Test {
  braid::test::FakeDeviceInstalled installed_;
};

// premulsum with its scalar in device memory (ncclScalarDevice) is read when the call runs, in
// stream order: the scalar is changed after the call is issued (as a kernel queued before it on
// the stream would), and the result uses the new value. A host-buffer call reads it at once.
void deviceScalarInStreamOrder(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  void* stream = fakeDevice().createStream(0);
  DeviceInts scalar(1), data(1001);
  scalar.data[0] = 2;
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, scalar.data, ncclInt32, ncclScalarDevice, comm),
            ncclSuccess);
  for (size_t i = 0; i < data.count; ++i) data.data[i] = input(ctx.rank(), i);
  fakeDevice().hold(stream);
  ASSERT_EQ(ncclAllReduce(data.data, data.data, data.count, ncclInt32, op, comm,
                          static_cast<cudaStream_t>(stream)),
            ncclSuccess);
  scalar.data[0] = 3;
  fakeDevice().release(stream);
  fakeDevice().synchronize(stream);
  std::vector<int32_t> want(data.count, 0);
  for (int r = 0; r < ctx.nranks(); ++r)
    for (size_t i = 0; i < data.count; ++i) want[i] += 3 * input(r, i);
  expectElements(ctx, data.data, want, "premulsum, device scalar set to 3 before the stream ran");

  std::vector<int32_t> host(17);
  for (size_t i = 0; i < host.size(); ++i) host[i] = input(ctx.rank(), i);
  scalar.data[0] = -5;
  ASSERT_EQ(ncclAllReduce(host.data(), host.data(), host.size(), ncclInt32, op, comm, nullptr),
            ncclSuccess)
      << ncclGetLastError(comm);
  std::vector<int32_t> wantHost(host.size(), 0);
  for (int r = 0; r < ctx.nranks(); ++r)
    for (size_t i = 0; i < host.size(); ++i) wantHost[i] += -5 * input(r, i);
  expectElements(ctx, host.data(), wantHost, "premulsum on host buffers, device scalar -5");
  EXPECT_EQ(ncclRedOpDestroy(op, comm), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceScalarTest, ReadInStreamOrder) {
  BRAID_EXPECT_ALL_RANKS_OK(
      runThreads(2, deviceScalarInStreamOrder, braid::test::deviceTestOptions()));
  BRAID_EXPECT_ALL_RANKS_OK(
      runThreads(2, deviceScalarInStreamOrder, braid::test::stagedDeviceTestOptions()));
}

}  // namespace
