// Page-locked (and managed) host buffers on a CUDA stream run the host path in the stream's
// order, as NCCL's kernels read them: after the work queued before the call, before the work
// queued after it. On the NULL stream the call runs at once, as for any host buffer. Fake device.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"

namespace {

using braid::test::expectElements;
using braid::test::fakeDevice;
using braid::test::RankContext;

constexpr int32_t kPoison = braid::test::kDeviceTestPoison;

class StreamOrderTest : public ::testing::Test {
  braid::test::FakeDeviceInstalled installed_;
};

void pinnedInStreamOrder(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  auto& fake = fakeDevice();
  const size_t count = 4099;
  auto* buf = static_cast<int32_t*>(fake.pinnedAlloc(count * 4));
  auto* out = static_cast<int32_t*>(fake.pinnedAlloc(count * 4));
  for (size_t i = 0; i < count; ++i) {
    buf[i] = braid::test::deviceTestInput(ctx.rank(), i);
    out[i] = kPoison;
  }
  std::vector<int32_t> want(count, 0);
  for (int r = 0; r < ctx.nranks(); ++r)
    for (size_t i = 0; i < count; ++i) want[i] += braid::test::deviceTestInput(r, i);

  // Held stream: the call returns, nothing has run, and it runs when the stream does.
  void* stream = fake.createStream(0);
  fake.hold(stream);
  ASSERT_EQ(
      ncclAllReduce(buf, out, count, ncclInt32, ncclSum, comm, static_cast<cudaStream_t>(stream)),
      ncclSuccess)
      << ncclGetLastError(comm);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(out[0], kPoison) << "the call ran before the stream's earlier work";
  fake.release(stream);
  fake.synchronize(stream);
  expectElements(ctx, out, want, "pinned allreduce on a stream");

  // NULL stream: done when the call returns.
  for (size_t i = 0; i < count; ++i) out[i] = kPoison;
  ASSERT_EQ(ncclAllReduce(buf, out, count, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
  expectElements(ctx, out, want, "pinned allreduce on the NULL stream");

  // Pinned and device buffers in one call are refused, as host and device are.
  braid::test::DeviceInts dev(count);
  EXPECT_EQ(ncclAllReduce(buf, dev.data, count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(stream)),
            ncclInvalidArgument);
  fake.pinnedFree(buf);
  fake.pinnedFree(out);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(StreamOrderTest, PinnedBuffersFollowTheStream) {
  BRAID_EXPECT_ALL_RANKS_OK(
      braid::test::runThreads(3, pinnedInStreamOrder, braid::test::deviceTestOptions()));
}

}  // namespace
