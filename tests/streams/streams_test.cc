// Host streams: a call given a braidStream_t returns before its work has run, the work runs in
// submission order, groups queue whole, failures are sticky and reported with their text, and a
// communicator with queued work can be destroyed or aborted safely.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;
using braid::test::RunOptions;
using braid::test::runProcesses;
using braid::test::runThreads;
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int32_t input(int rank, size_t i) {
  return static_cast<int32_t>((i * 7919 + static_cast<size_t>(rank) * 104729) % 1000) - 500;
}

// Rank sums of input(), the exact expectation.
std::vector<int32_t> expectedSum(int nranks, size_t count) {
  std::vector<int32_t> e(count, 0);
  for (int r = 0; r < nranks; r++)
    for (size_t i = 0; i < count; i++) e[i] += input(r, i);
  return e;
}

void checkEqual(RankContext& ctx, const std::vector<int32_t>& got, const std::vector<int32_t>& want,
                const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++)
    if (got[i] != want[i]) {
      ctx.fail(std::string(what) + ": element " + std::to_string(i) + " is " +
               std::to_string(got[i]) + ", expected " + std::to_string(want[i]));
      return;
    }
}

RunOptions opts() {
  RunOptions o;
  o.timeoutS = 60;
  o.env = {{"BRAID_TIMEOUT_S", "10"}};
  return o;
}

// Counts the ranks whose call has returned, visible to thread ranks and to forked process
// ranks alike (a shared anonymous mapping made before the ranks start).
std::atomic<int>* sharedReturnedCount() {
  static std::atomic<int>* count = [] {
    void* p = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : new (p) std::atomic<int>(0);
  }();
  return count;
}

// The last rank arrives late: it makes no call until every other rank's call has returned. A
// call that waited for the late rank would never return, so the late rank gives up after 30 s
// and says so; no clock decides the outcome on a loaded machine.
void asyncAllReduce(RankContext& ctx) {
  std::atomic<int>* returned = sharedReturnedCount();
  ASSERT_NE(returned, nullptr);
  ncclComm_t comm = ctx.initComm();
  ASSERT_NE(comm, nullptr);
  braidStream_t s;
  ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
  const size_t count = 100003;  // prime, several slots
  std::vector<int32_t> buf(count), out(count, -7);
  for (size_t i = 0; i < count; i++) buf[i] = input(ctx.rank(), i);
  const bool late = ctx.rank() == ctx.nranks() - 1;
  if (late) {
    auto t0 = Clock::now();
    while (returned->load() < ctx.nranks() - 1 && secondsSince(t0) < 30)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_EQ(returned->load(), ctx.nranks() - 1)
        << "the other ranks' calls waited for the late rank";
  }
  ASSERT_EQ(
      ncclAllReduce(buf.data(), out.data(), count, ncclInt32, ncclSum, comm, braidStreamAsCuda(s)),
      ncclSuccess);
  if (!late) {
    // The late rank has not called yet, so the work cannot have finished.
    EXPECT_EQ(braidStreamQuery(s), ncclInProgress);
    returned->fetch_add(1);
  }
  EXPECT_EQ(braidStreamSynchronize(s), ncclSuccess) << ncclGetLastError(comm);
  EXPECT_EQ(braidStreamQuery(s), ncclSuccess);
  checkEqual(ctx, out, expectedSum(ctx.nranks(), count), "allreduce on a host stream");
  EXPECT_EQ(braidStreamDestroy(s), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(HostStream, CallReturnsBeforeTheWorkRunsThreads) {
  for (int n : {1, 2, 3, 5}) {
    sharedReturnedCount()->store(0);
    BRAID_EXPECT_ALL_RANKS_OK(runThreads(n, asyncAllReduce, opts()));
  }
}

TEST(HostStream, CallReturnsBeforeTheWorkRunsProcesses) {
  sharedReturnedCount()->store(0);
  BRAID_EXPECT_ALL_RANKS_OK(runProcesses(3, asyncAllReduce, opts()));
}

struct OrderProbe {
  const std::vector<int32_t>* out;
  std::vector<int32_t> snapshot;
  std::atomic<int>* sequence;
  int seenAt = -1;
};

int takeSnapshot(void* arg) {
  auto* p = static_cast<OrderProbe*>(arg);
  p->snapshot = *p->out;
  p->seenAt = p->sequence->fetch_add(1);
  return 0;
}

// Host functions queued after a collective see its finished output, and run in queue order.
TEST(HostStream, WorkRunsInSubmissionOrder) {
  auto report = runThreads(
      3,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        ASSERT_NE(comm, nullptr);
        braidStream_t s;
        ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
        const int kOps = 6;
        std::atomic<int> sequence{0};
        std::vector<std::vector<int32_t>> in(kOps), out(kOps);
        std::vector<OrderProbe> probes(kOps);
        for (int k = 0; k < kOps; k++) {
          size_t count = 1 + static_cast<size_t>(k) * 4099;  // 1, then primes-ish sizes
          in[k].resize(count);
          out[k].assign(count, -1);
          for (size_t i = 0; i < count; i++) in[k][i] = input(ctx.rank() + k, i);
          ASSERT_EQ(ncclAllReduce(in[k].data(), out[k].data(), count, ncclInt32, ncclSum, comm,
                                  braidStreamAsCuda(s)),
                    ncclSuccess);
          probes[k] = {&out[k], {}, &sequence};
          ASSERT_EQ(braidStreamLaunchHostFunc(s, takeSnapshot, &probes[k]), ncclSuccess);
        }
        ASSERT_EQ(braidStreamSynchronize(s), ncclSuccess);
        for (int k = 0; k < kOps; k++) {
          EXPECT_EQ(probes[k].seenAt, k);
          std::vector<int32_t> want(out[k].size(), 0);
          for (int r = 0; r < ctx.nranks(); r++)
            for (size_t i = 0; i < want.size(); i++) want[i] += input(r + k, i);
          checkEqual(ctx, probes[k].snapshot, want, "snapshot taken after the allreduce");
        }
        EXPECT_EQ(braidStreamDestroy(s), ncclSuccess);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      opts());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Two groups of ring sends/receives queued back to back: each keeps its own batch.
TEST(HostStream, GroupsQueueWhole) {
  auto report = runThreads(
      5,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        ASSERT_NE(comm, nullptr);
        braidStream_t s;
        ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
        const int n = ctx.nranks(), me = ctx.rank();
        const int next = (me + 1) % n, prev = (me + n - 1) % n;
        const size_t count = 1031;
        std::vector<int32_t> send1(count), send2(count), recv1(count, -1), recv2(count, -1);
        for (size_t i = 0; i < count; i++) {
          send1[i] = input(me, i);
          send2[i] = input(me + 100, i);
        }
        cudaStream_t cs = braidStreamAsCuda(s);
        ASSERT_EQ(ncclGroupStart(), ncclSuccess);
        ncclSend(send1.data(), count, ncclInt32, next, comm, cs);
        ncclRecv(recv1.data(), count, ncclInt32, prev, comm, cs);
        ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
        ASSERT_EQ(ncclGroupStart(), ncclSuccess);
        ncclSend(send2.data(), count, ncclInt32, prev, comm, cs);
        ncclRecv(recv2.data(), count, ncclInt32, next, comm, cs);
        ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
        ASSERT_EQ(braidStreamSynchronize(s), ncclSuccess) << ncclGetLastError(comm);
        std::vector<int32_t> want1(count), want2(count);
        for (size_t i = 0; i < count; i++) {
          want1[i] = input(prev, i);
          want2[i] = input(next + 100, i);
        }
        checkEqual(ctx, recv1, want1, "first group");
        checkEqual(ctx, recv2, want2, "second group");
        EXPECT_EQ(braidStreamDestroy(s), ncclSuccess);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      opts());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

int failingHostFunc(void*) {
  return 3;
}
int countingHostFunc(void* arg) {
  static_cast<std::atomic<int>*>(arg)->fetch_add(1);
  return 0;
}

TEST(HostStream, FailureIsStickyAndNamed) {
  braidStream_t s;
  ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
  std::atomic<int> ran{0};
  ASSERT_EQ(braidStreamLaunchHostFunc(s, countingHostFunc, &ran), ncclSuccess);
  ASSERT_EQ(braidStreamLaunchHostFunc(s, failingHostFunc, nullptr), ncclSuccess);
  ASSERT_EQ(braidStreamLaunchHostFunc(s, countingHostFunc, &ran), ncclSuccess);
  EXPECT_EQ(braidStreamSynchronize(s), ncclInternalError);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("returned 3"), std::string::npos)
      << ncclGetLastError(nullptr);
  EXPECT_EQ(ran.load(), 1) << "work queued after a failure must not run";
  EXPECT_EQ(braidStreamQuery(s), ncclInternalError);
  EXPECT_EQ(braidStreamDestroy(s), ncclInternalError);
}

TEST(HostStream, BadArguments) {
  EXPECT_EQ(braidStreamCreate(nullptr), ncclInvalidArgument);
  int notAStream = 0;
  auto bogus = reinterpret_cast<braidStream_t>(&notAStream);
  EXPECT_EQ(braidStreamQuery(bogus), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("not a live braidStream_t"),
            std::string::npos);
  EXPECT_EQ(braidStreamSynchronize(nullptr), ncclInvalidArgument);
  EXPECT_EQ(braidStreamDestroy(bogus), ncclInvalidArgument);
  braidStream_t s;
  ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
  EXPECT_EQ(braidStreamLaunchHostFunc(s, nullptr, nullptr), ncclInvalidArgument);
  // Arguments are checked on the caller's thread: nothing is queued for a bad call.
  auto report = runThreads(
      1,
      [s](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        ASSERT_NE(comm, nullptr);
        int32_t x = 1;
        EXPECT_EQ(ncclAllReduce(&x, nullptr, 1, ncclInt32, ncclSum, comm, braidStreamAsCuda(s)),
                  ncclInvalidArgument);
        EXPECT_EQ(ncclBroadcast(&x, &x, 1, ncclInt32, 3, comm, braidStreamAsCuda(s)),
                  ncclInvalidArgument);
        EXPECT_EQ(braidStreamQuery(s), ncclSuccess);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      opts());
  BRAID_EXPECT_ALL_RANKS_OK(report);
  EXPECT_EQ(braidStreamDestroy(s), ncclSuccess);
}

// Destroy waits for queued work that uses the communicator.
TEST(HostStream, DestroyWaitsForQueuedWork) {
  auto report = runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        ASSERT_NE(comm, nullptr);
        braidStream_t s;
        ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
        const size_t count = 65537;
        std::vector<int32_t> in(count), out(count, -1);
        for (size_t i = 0; i < count; i++) in[i] = input(ctx.rank(), i);
        ASSERT_EQ(ncclAllReduce(in.data(), out.data(), count, ncclInt32, ncclSum, comm,
                                braidStreamAsCuda(s)),
                  ncclSuccess);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
        EXPECT_EQ(braidStreamSynchronize(s), ncclSuccess);
        checkEqual(ctx, out, expectedSum(2, count), "work finished before destroy");

        EXPECT_EQ(braidStreamDestroy(s), ncclSuccess);
      },
      opts());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(HostStream, AbortEndsQueuedWorkThatCannotFinish) {
  auto report = runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        ASSERT_NE(comm, nullptr);
        if (ctx.rank() == 1) {
          // Never calls the collective; leaves once rank 0 has aborted (its peer is gone).
          std::this_thread::sleep_for(std::chrono::milliseconds(600));
          ncclCommAbort(comm);
          return;
        }
        braidStream_t s;
        ASSERT_EQ(braidStreamCreate(&s), ncclSuccess);
        std::vector<int32_t> buf(4096, 1);
        ASSERT_EQ(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclInt32, ncclSum, comm,
                                braidStreamAsCuda(s)),
                  ncclSuccess);
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        EXPECT_EQ(braidStreamQuery(s), ncclInProgress);
        auto t0 = Clock::now();
        EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
        EXPECT_LT(secondsSince(t0), 1.5) << "abort waited for the queued work to time out";
        EXPECT_NE(braidStreamSynchronize(s), ncclSuccess);
        EXPECT_EQ(braidStreamDestroy(s) != ncclSuccess, true);
      },
      opts());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
