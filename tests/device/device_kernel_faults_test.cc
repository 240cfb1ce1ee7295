// Collective kernels that cannot finish, through the NCCL API on the fake device: a peer that
// never launches (ncclCommAbort ends the wait), peers whose kernels run different calls (the
// error names both), and ranks sharing one default stream (refused before any launch).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness/rank_harness.h"
#include "nccl.h"
#include "tests/device/device_test_support.h"
#include "tests/device/fake_device_runtime.h"

namespace {

using braid::test::DeviceInts;
using braid::test::fakeDevice;
using braid::test::RankContext;
using braid::test::RunOptions;
using braid::test::runThreads;

using DeviceKernelTest = braid::test::FakeDeviceTest;

RunOptions kernelOptions(std::vector<std::pair<std::string, std::string>> extra = {}) {
  return braid::test::kernelTestOptions(std::move(extra));
}

// A peer that never launches: ncclCommAbort makes the waiting blocks give up, the stream
// completes at once (long before the timeout), and nothing hangs.
std::atomic<bool> abortDone{false};
void abortEndsAWaitingKernel(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  if (ctx.rank() == 0) {
    void* stream = fakeDevice().createStream(0);
    DeviceInts buf(4096);
    ASSERT_EQ(ncclAllReduce(buf.data, buf.data, 4096, ncclInt32, ncclSum, comm,
                            static_cast<cudaStream_t>(stream)),
              ncclSuccess);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    fakeDevice().synchronize(stream);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    abortDone = true;
  } else {
    while (!abortDone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  }
}

// Ranks whose kernels run different calls as the same call number (here, counts that differ):
// the waiting channel finds the peer's call in its FIFO, and the communicator's error names
// both calls, as the host path's mismatch watch does, instead of a bare timeout. Device calls
// are numbered and recorded like host calls: the flight recorder holds the kernel's entry.
std::atomic<int> mismatchChecked{0};
void kernelMismatch(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  void* stream = fakeDevice().createStream(0);
  // Rank 0's call takes many chunks on several channels, rank 1's one chunk on one.
  const size_t count = ctx.rank() == 0 ? size_t{1} << 20 : 2048;
  DeviceInts buf(count);
  ASSERT_EQ(ncclAllReduce(buf.data, buf.data, count, ncclInt32, ncclSum, comm,
                          static_cast<cudaStream_t>(stream)),
            ncclSuccess);
  fakeDevice().synchronize(stream);
  ncclResult_t async = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  if (ctx.rank() == 0) {  // rank 1 may finish first, having taken all it expected
    EXPECT_EQ(async, ncclInvalidUsage);
    const std::string e = ncclGetLastError(comm);
    EXPECT_NE(e.find("operation mismatch: rank 0's collective kernel ran"), std::string::npos) << e;
    EXPECT_NE(e.find("rank 1"), std::string::npos) << e;
    EXPECT_NE(e.find("1048576"), std::string::npos) << e;
    EXPECT_NE(e.find("2048"), std::string::npos) << e;
  }
  // Neither rank frees its FIFOs while the other's kernel may still reach into them.
  mismatchChecked++;
  while (mismatchChecked < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, AMismatchIsNamedNotJustTimedOut) {
  RunOptions o = kernelOptions();
  o.env.push_back({"BRAID_TIMEOUT_S", "1"});
  o.env.push_back({"NCCL_ALGO", "Ring"});
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, kernelMismatch, o));
}

TEST_F(DeviceKernelTest, AbortEndsAWaitingKernel) {
  RunOptions o = kernelOptions();
  o.env.push_back({"BRAID_TIMEOUT_S", "60"});
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, abortEndsAWaitingKernel, o));
}

// Two ranks of one process on one device's default stream would wait for each other on it:
// refused, saying why.
void sharedDefaultStream(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  DeviceInts buf(16);
  EXPECT_EQ(ncclAllReduce(buf.data, buf.data, 16, ncclInt32, ncclSum, comm, nullptr),
            ncclInvalidUsage);
  const std::string e = ncclGetLastError(comm);
  EXPECT_NE(e.find("default stream of device 0"), std::string::npos) << e;
  EXPECT_NE(e.find("a stream of its own"), std::string::npos) << e;
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST_F(DeviceKernelTest, RanksSharingTheDefaultStreamAreRefused) {
  BRAID_EXPECT_ALL_RANKS_OK(runThreads(2, sharedDefaultStream, kernelOptions()));
}

/// An int32 sum all-reduce of `count` in place on a stream of device 0, checked.

}  // namespace
