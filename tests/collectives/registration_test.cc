// Registration across ranks: window registration agrees on its arguments (a wrong size or a
// refused argument on one rank fails every rank, naming it, without a hang), and zero-copy
// AllReduce stays exact when a rank frees its memory and allocates again (the peers' cached
// mappings must follow the new allocation), and when its chunks are shared out over many calls
// of odd sizes, in place and not, between other zero-copy collectives.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/zero_copy.h"
#include "comm/communicator.h"
#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

bool mentions(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

// Every rank must still agree on a 1-element allreduce afterwards.
void expectUsable(RankContext& ctx, ncclComm_t comm) {
  int64_t one = 1, total = 0;
  if (ncclAllReduce(&one, &total, 1, ncclInt64, ncclSum, comm, nullptr) != ncclSuccess ||
      total != ctx.nranks())
    ctx.fail("allreduce after the refused registration gave " + std::to_string(total) + ": " +
             ncclGetLastError(comm));
}

void windowSizesDisagree(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  std::vector<char> buf(8192);
  const size_t size = ctx.rank() == 1 ? 8192 : 4096;
  ncclWindow_t win = nullptr;
  ncclResult_t r = ncclCommWindowRegister(comm, buf.data(), size, &win, NCCL_WIN_COLL_SYMMETRIC);
  std::string text = ncclGetLastError(comm);
  if (r != ncclInvalidArgument || !mentions(text, "size") || !mentions(text, "rank 1") ||
      !mentions(text, "8192"))
    ctx.fail("symmetric window sizes 4096/8192: got " + std::to_string(r) + " \"" + text + "\"");
  // Without NCCL_WIN_COLL_SYMMETRIC the sizes may differ.
  if (ncclCommWindowRegister(comm, buf.data(), size, &win, NCCL_WIN_DEFAULT) != ncclSuccess)
    ctx.fail(std::string("default window: ") + ncclGetLastError(comm));
  else if (ncclCommWindowDeregister(comm, win) != ncclSuccess)
    ctx.fail(std::string("window deregister: ") + ncclGetLastError(comm));
  expectUsable(ctx, comm);
  ncclCommDestroy(comm);
}

void windowRefusedOnOneRank(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  std::vector<char> buf(4096);
  const bool bad = ctx.rank() == ctx.nranks() - 1;
  ncclWindow_t win = nullptr;
  ncclResult_t r = ncclCommWindowRegister(comm, bad ? nullptr : buf.data(), buf.size(), &win, 0);
  std::string text = ncclGetLastError(comm);
  const std::string want =
      bad ? "buff is NULL" : "rank " + std::to_string(ctx.nranks() - 1) + " refused";
  if (r != ncclInvalidArgument || !mentions(text, want))
    ctx.fail("expected \"" + want + "\", got " + std::to_string(r) + " \"" + text + "\"");
  expectUsable(ctx, comm);
  ncclCommDestroy(comm);
}

// Thread-rank and process-rank runs are separate tests: the sanitizer passes run only the first.
TEST(WindowRegister, SymmetricSizesMustAgreeThreads) {
  for (int n : {2, 3}) {
    auto report = braid::test::runThreads(n, windowSizesDisagree);
    BRAID_EXPECT_ALL_RANKS_OK(report);
  }
}

TEST(WindowRegister, SymmetricSizesMustAgreeProcesses) {
  auto report = braid::test::runProcesses(3, windowSizesDisagree);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(WindowRegister, ARefusalOnOneRankFailsEveryRankThreads) {
  auto report = braid::test::runThreads(3, windowRefusedOnOneRank);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(WindowRegister, ARefusalOnOneRankFailsEveryRankProcesses) {
  auto report = braid::test::runProcesses(3, windowRefusedOnOneRank);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Each round: allocate, register, allreduce (rank r contributes r+round+i), check, free. The
// descriptor numbers repeat from round to round; the sums must follow the new memory.
void reallocateBetweenCalls(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks();
  const size_t count = (3 << 20) / sizeof(int32_t) + 5;  // above the zero-copy threshold
  for (int round = 0; round < 3; round++) {
    int32_t *send = nullptr, *recv = nullptr;
    // A different size each round, so a stale mapping would also be the wrong length.
    const size_t bytes = (count + round * 4096) * sizeof(int32_t);
    if (ncclMemAlloc(reinterpret_cast<void**>(&send), bytes) != ncclSuccess ||
        ncclMemAlloc(reinterpret_cast<void**>(&recv), bytes) != ncclSuccess)
      return ctx.fail(std::string("ncclMemAlloc: ") + ncclGetLastError(nullptr));
    void *hs = nullptr, *hr = nullptr;
    ncclCommRegister(comm, send, bytes, &hs);
    ncclCommRegister(comm, recv, bytes, &hr);
    for (size_t i = 0; i < count; i++) send[i] = static_cast<int32_t>(ctx.rank() + round + i);
    for (size_t i = 0; i < count; i++) recv[i] = -1;
    const uint64_t before = comm->ops.zeroCopyRuns;
    if (ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
      return ctx.fail(std::string("allreduce: ") + ncclGetLastError(comm));
    if (comm->ops.zeroCopyRuns != before + 1)
      ctx.fail("round " + std::to_string(round) + " staged");
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
      int64_t want = static_cast<int64_t>(n) * (round + i) + n * (n - 1) / 2;
      if (recv[i] != static_cast<int32_t>(want)) wrong++;
    }
    if (wrong) ctx.fail("round " + std::to_string(round) + ": " + std::to_string(wrong) + " wrong");
    ncclCommDeregister(comm, hs);
    ncclCommDeregister(comm, hr);
    ncclMemFree(send);
    ncclMemFree(recv);
  }
  ncclCommDestroy(comm);
}

// A program that never registers pays the descriptor round once per kZeroCopyQuietCalls large
// calls, not on every one; once it registers, ZeroCopy takes over within that many calls. Every
// result is checked.
void quietAfterUnregisteredCalls(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks();
  const size_t count = (2 << 20) / sizeof(int32_t) + 3;  // above the zero-copy threshold
  const size_t bytes = count * sizeof(int32_t);
  int32_t *send = nullptr, *recv = nullptr;
  if (ncclMemAlloc(reinterpret_cast<void**>(&send), bytes) != ncclSuccess ||
      ncclMemAlloc(reinterpret_cast<void**>(&recv), bytes) != ncclSuccess)
    return ctx.fail(std::string("ncclMemAlloc: ") + ncclGetLastError(nullptr));
  auto call = [&](int k) {
    for (size_t i = 0; i < count; i++) send[i] = static_cast<int32_t>(ctx.rank() + k + i);
    for (size_t i = 0; i < count; i++) recv[i] = -1;
    if (ncclAllReduce(send, recv, count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
      return ctx.fail(std::string("allreduce: ") + ncclGetLastError(comm));
    for (size_t i = 0; i < count; i++) {
      const int64_t want = static_cast<int64_t>(n) * (k + i) + n * (n - 1) / 2;
      if (recv[i] != static_cast<int32_t>(want))
        return ctx.fail("call " + std::to_string(k) + " element " + std::to_string(i) + " is " +
                        std::to_string(recv[i]));
    }
  };
  const int calls = 2 * static_cast<int>(braid::kZeroCopyQuietCalls) + 3;
  for (int k = 0; k < calls; k++) call(k);
  // Rounds at calls 0, 16 and 32 (each starts a quiet period of 16 calls, counting itself).
  if (comm->ops.zeroCopyRounds != 3)
    ctx.fail("unregistered: " + std::to_string(comm->ops.zeroCopyRounds) +
             " descriptor rounds in " + std::to_string(calls) + " calls, expected 3");
  if (comm->ops.zeroCopyRuns != 0) ctx.fail("ran zero-copy on unregistered buffers");
  void *hs = nullptr, *hr = nullptr;
  ncclCommRegister(comm, send, bytes, &hs);
  ncclCommRegister(comm, recv, bytes, &hr);
  for (int k = 0; k < static_cast<int>(braid::kZeroCopyQuietCalls); k++) call(calls + k);
  if (comm->ops.zeroCopyRuns == 0) ctx.fail("registered buffers never ran zero-copy");
  ncclCommDeregister(comm, hs);
  ncclCommDeregister(comm, hr);
  ncclMemFree(send);
  ncclMemFree(recv);
  ncclCommDestroy(comm);
}

// The zero-copy allreduce hands out chunks of 256 KiB through counters that grow over all its
// calls (allreduce_zerocopy.cc): sizes around the sharing threshold and the chunk size, in place
// and out of place, with a zero-copy AllGather between them (which must not move the counters),
// every element against the exact sum; then the counters must account for every chunk.
void sharedChunksOverManyCalls(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  const size_t chunk = braid::kZeroCopyChunkBytes / sizeof(int32_t);
  const size_t shared = braid::kZeroCopySharedMinBytes / sizeof(int32_t);
  // Below the sharing threshold (the static schedule), at it, and above it by odd amounts.
  const size_t counts[] = {1000003, shared - 1, shared, shared + 1, shared + 3 * chunk + 7};
  const size_t most = std::max<size_t>(1000003 * n, shared + 3 * chunk + 7);
  int32_t *send = nullptr, *recv = nullptr;
  void *hs = nullptr, *hr = nullptr;
  if (ncclMemAlloc(reinterpret_cast<void**>(&send), most * 4) != ncclSuccess ||
      ncclMemAlloc(reinterpret_cast<void**>(&recv), most * 4) != ncclSuccess ||
      ncclCommRegister(comm, send, most * 4, &hs) != ncclSuccess ||
      ncclCommRegister(comm, recv, most * 4, &hr) != ncclSuccess)
    return ctx.fail(std::string("ncclMemAlloc/ncclCommRegister: ") + ncclGetLastError(comm));
  uint64_t chunks = 0;
  int call = 0;
  for (int round = 0; round < 2; round++) {
    for (size_t count : counts) {
      const bool inPlace = (call % 2) == 1;
      int32_t* out = inPlace ? send : recv;
      for (size_t i = 0; i < count; i++)
        send[i] = static_cast<int32_t>((me + 1) * (i % 1009) + call);
      if (!inPlace)
        for (size_t i = 0; i < count; i++) recv[i] = -7;
      if (ncclAllReduce(send, out, count, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
        return ctx.fail("allreduce of " + std::to_string(count) + ": " + ncclGetLastError(comm));
      for (size_t i = 0; i < count; i++) {
        const int64_t want = static_cast<int64_t>(n) * (n + 1) / 2 * (i % 1009) + n * call;
        if (out[i] != want)
          return ctx.fail("call " + std::to_string(call) + " (" + std::to_string(count) +
                          (inPlace ? ", in place" : "") + ") element " + std::to_string(i) +
                          " is " + std::to_string(out[i]) + ", expected " + std::to_string(want));
      }
      if (count * sizeof(int32_t) >= braid::kZeroCopySharedMinBytes)
        chunks += (count + chunk - 1) / chunk;
      call++;
      // AllGather of 1000003 elements per rank: zero-copy too, without the chunk counters.
      for (size_t i = 0; i < 1000003; i++) send[i] = static_cast<int32_t>(me * 7 + i);
      if (ncclAllGather(send, recv, 1000003, ncclInt32, comm, nullptr) != ncclSuccess)
        return ctx.fail(std::string("allgather: ") + ncclGetLastError(comm));
      for (int r = 0; r < n; r++)
        for (size_t i = 0; i < 1000003; i++)
          if (recv[r * 1000003 + i] != static_cast<int32_t>(r * 7 + i))
            return ctx.fail("allgather: rank " + std::to_string(r) + "'s element " +
                            std::to_string(i) + " is " + std::to_string(recv[r * 1000003 + i]));
    }
  }
  if (comm->ops.sharedChunks != chunks)
    ctx.fail("the calls handed out " + std::to_string(comm->ops.sharedChunks) +
             " chunks, expected " + std::to_string(chunks));
  if (comm->ops.zeroCopyRuns < static_cast<uint64_t>(call))
    ctx.fail(std::to_string(comm->ops.zeroCopyRuns) + " zero-copy runs in " + std::to_string(call) +
             " allreduce calls");
  ncclCommDeregister(comm, hs);
  ncclCommDeregister(comm, hr);
  ncclMemFree(send);
  ncclMemFree(recv);
  ncclCommDestroy(comm);
}

TEST(ZeroCopy, SharedChunksOverManyCallsThreads) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runThreads(3, sharedChunksOverManyCalls));
}

TEST(ZeroCopy, SharedChunksOverManyCallsFiveThreads) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runThreads(5, sharedChunksOverManyCalls));
}

TEST(ZeroCopy, SharedChunksOverManyCallsProcesses) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runProcesses(3, sharedChunksOverManyCalls));
}

TEST(ZeroCopy, UnregisteredCallsSkipTheRoundForAWhileThreads) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runThreads(3, quietAfterUnregisteredCalls));
}

TEST(ZeroCopy, UnregisteredCallsSkipTheRoundForAWhileProcesses) {
  BRAID_EXPECT_ALL_RANKS_OK(braid::test::runProcesses(2, quietAfterUnregisteredCalls));
}

TEST(ZeroCopy, PeersFollowReallocatedMemoryProcesses) {
  auto report = braid::test::runProcesses(3, reallocateBetweenCalls);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(ZeroCopy, PeersFollowReallocatedMemoryThreads) {
  auto report = braid::test::runThreads(2, reallocateBetweenCalls);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
