// The bootstrap ring: the root only introduces each rank to its next, and the ranks' infos go
// round the ring. Every rank must get exactly every rank's info in rank order (threads and
// processes, payloads larger than the socket buffers); the root's output must grow with n, not
// n^2; a stranger on a ring port must be turned away without spoiling init; and a rank that
// leaves the ring mid-way must fail the others promptly with an error that names a rank.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap.h"
#include "core/bootstrap_root.h"
#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "harness/harness_internal.h"
#include "harness/rank_harness.h"
#include "unit/unit_helpers.h"
#include "util/status.h"

namespace braid {
namespace {

using test::RankContext;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A different length and content per rank and round, so a swapped, truncated or repeated entry
// shows.
std::string payloadOf(int rank, int round, size_t base) {
  std::string s(base + static_cast<size_t>(rank) * 7 + static_cast<size_t>(round), '\0');
  for (size_t i = 0; i < s.size(); i++) s[i] = static_cast<char>(rank * 31 + round * 7 + i);
  return s;
}

WaitPolicy policyOf(double timeoutS) {
  WaitPolicy p;
  p.timeoutS = timeoutS;
  return p;
}

// Joins, checks the infos, then all-gathers `rounds` more payloads of about `bytes` each.
void joinAndGather(RankContext& ctx, size_t bytes, int rounds, double timeoutS = 60) {
  std::unique_ptr<Bootstrap> b;
  std::vector<std::string> all;
  ASSERT_EQ(Bootstrap::join(ctx.id(), ctx.rank(), ctx.nranks(), payloadOf(ctx.rank(), 0, 100),
                            policyOf(timeoutS), &b, &all),
            ncclSuccess)
      << lastError();
  ASSERT_EQ(static_cast<int>(all.size()), ctx.nranks());
  for (int r = 0; r < ctx.nranks(); r++)
    EXPECT_EQ(all[r], payloadOf(r, 0, 100)) << "rank " << ctx.rank() << ": info of rank " << r;
  for (int round = 1; round <= rounds; round++) {
    ASSERT_EQ(b->allGather(payloadOf(ctx.rank(), round, bytes), &all), ncclSuccess) << lastError();
    ASSERT_EQ(static_cast<int>(all.size()), ctx.nranks());
    for (int r = 0; r < ctx.nranks(); r++)
      EXPECT_TRUE(all[r] == payloadOf(r, round, bytes))
          << "rank " << ctx.rank() << ": round " << round << ", entry of rank " << r;
  }
  ASSERT_EQ(b->barrier(), ncclSuccess) << lastError();
}

class BootstrapRingSizes : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapRingSizes, EveryRankGetsEveryInfoInRankOrder) {
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "60"}});
  const int n = GetParam();
  test::RunReport report = test::runThreads(n, [](RankContext& ctx) { joinAndGather(ctx, 0, 3); });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

INSTANTIATE_TEST_SUITE_P(Threads, BootstrapRingSizes, ::testing::Values(1, 2, 3, 5, 64));

TEST(BootstrapRing, PayloadsLargerThanSocketBuffersDoNotDeadlock) {
  // 12 MiB per rank: every rank sends and receives far more than a socket buffer holds at once.
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "60"}});
  test::RunReport report =
      test::runThreads(3, [](RankContext& ctx) { joinAndGather(ctx, size_t(12) << 20, 2, 20); });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(BootstrapRing, ProcessesGetEveryInfoInRankOrder) {
  test::RunOptions options;
  options.env = {{"NCCL_SOCKET_IFNAME", "lo"}};
  test::RunReport report = test::runProcesses(
      5, [](RankContext& ctx) { joinAndGather(ctx, size_t(1) << 20, 2); }, options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(BootstrapRing, TheRootSendsAConstantAmountPerRank) {
  // What the root sends at init: each rank's handshake challenge and its ring assignment, the
  // same whatever the number of ranks or the size of their infos (the all-gather of the infos,
  // n x n of them, goes round the ring).
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "60"}});
  const uint64_t perRank = sizeof(AuthChallenge) + sizeof(FrameHeader) + sizeof(RingAssignment);
  for (int n : {8, 64}) {
    const uint64_t before = bootstrapRootBytesSent();
    test::RunReport report = test::runThreads(n, [](RankContext& ctx) {
      std::unique_ptr<Bootstrap> b;
      std::vector<std::string> all;
      ASSERT_EQ(Bootstrap::join(ctx.id(), ctx.rank(), ctx.nranks(), std::string(1000, 'i'),
                                policyOf(60), &b, &all),
                ncclSuccess)
          << lastError();
      ASSERT_EQ(b->allGather(std::string(1000, 'g'), &all), ncclSuccess) << lastError();
    });
    BRAID_EXPECT_ALL_RANKS_OK(report);
    EXPECT_EQ(bootstrapRootBytesSent() - before, perRank * n) << n << " ranks";
  }
}

// Connections a stranger opened to rank 1's ring port before rank 1 joined.
std::vector<int> gStrangerFds;

int dial(const SockAddr& addr) {
  int fd = socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0)
    close(fd), fd = -1;
  return fd;
}

// Knocks on rank 1's ring port before it joins, so these connections wait in front of the real
// previous rank's: one posing as rank 0 with a guessed token, one sending junk, one silent.
void knockOnRank1(int rank, const SockAddr& ringAddr) {
  if (rank != 1) return;
  RingHello guess{kRingMagic, kBootstrapVersion, 0, 0, {}};
  for (size_t i = 0; i < kTokenBytes; i++) guess.token[i] = static_cast<unsigned char>(i * 13);
  const std::string junk(sizeof(RingHello), 'x');
  for (int kind = 0; kind < 3; kind++) {
    int fd = dial(ringAddr);
    if (fd < 0) continue;
    if (kind == 0) send(fd, &guess, sizeof(guess), MSG_NOSIGNAL);
    if (kind == 1) send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    gStrangerFds.push_back(fd);
  }
}

TEST(BootstrapRing, StrangersOnARingPortAreTurnedAway) {
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "20"}});
  gStrangerFds.clear();
  setRingListenHook(knockOnRank1);
  test::RunReport report =
      test::runThreads(3, [](RankContext& ctx) { joinAndGather(ctx, 10, 1, 10); });
  setRingListenHook(nullptr);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  EXPECT_LT(report.seconds, 10) << "rank 1 waited on a stranger";
  ASSERT_EQ(gStrangerFds.size(), 3u);
  for (int fd : gStrangerFds) {
    EXPECT_TRUE(unit_test::closedByPeer(fd, 5)) << "a stranger is still connected to the ring port";
    close(fd);
  }
}

// Plays rank `rank` of the id's communicator by hand up to the ring: joins the root (with the
// real secret), connects to its next and accepts its previous, then drops both ring connections
// while its root connection stays open, as a rank whose ring sockets broke would. With
// `ringPort`, it stops after joining instead, its ring port listening (*ringPort, to close
// later), as a rank that hangs before linking. Returns the root connection (to close later), or
// -1.
int joinThenLeaveTheRing(const ncclUniqueId& id, int rank, int nranks, int* ringPort = nullptr) {
  UniqueIdFields f;
  SockAddr root;
  if (unpackUniqueId(id, &f, &root) != ncclSuccess) return -1;
  int rootFd = dial(root);
  if (rootFd < 0) return -1;
  SockAddr ringAddr;
  ringAddr.len = sizeof(ringAddr.storage);
  getsockname(rootFd, reinterpret_cast<sockaddr*>(&ringAddr.storage), &ringAddr.len);
  ringAddr.setPort(0);
  int listenFd = -1;
  const Deadline deadline = Deadline::after(20);
  FrameHeader h{};
  RingAssignment a{};
  if (listenOn(&ringAddr, &listenFd) != ncclSuccess ||
      bootstrapHandshake(rootFd, f, nranks, rank, ringAddr, deadline, nullptr) != ncclSuccess ||
      recvAll(rootFd, &h, sizeof(h), deadline, nullptr) != ncclSuccess || h.kind != kFrameRing ||
      h.bytes != sizeof(a) || recvAll(rootFd, &a, sizeof(a), deadline, nullptr) != ncclSuccess) {
    close(rootFd);
    return -1;
  }
  if (ringPort) {
    *ringPort = listenFd;
    return rootFd;
  }
  SockAddr next;
  memcpy(&next.storage, a.nextAddr, a.nextAddrLen);
  next.len = a.nextAddrLen;
  int nextFd = -1, prevFd = -1;
  RingHello hello{kRingMagic, kBootstrapVersion, rank, 0, {}};
  memcpy(hello.token, a.tokenToNext, kTokenBytes);
  if (connectTo(next, deadline, nullptr, &nextFd) == ncclSuccess)
    sendAll(nextFd, &hello, sizeof(hello), deadline, nullptr);
  if (acceptFrom(listenFd, deadline, nullptr, &prevFd) == ncclSuccess)
    recvAll(prevFd, &hello, sizeof(hello), deadline, nullptr);
  for (int fd : {nextFd, prevFd, listenFd})
    if (fd >= 0) close(fd);
  return rootFd;
}

// The survivors' side: init must fail soon, naming a rank and the bootstrap ring.
void initMustFailNamingARank(RankContext& ctx) {
  auto start = std::chrono::steady_clock::now();
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
  const double seconds = secondsSince(start);
  const std::string error = ncclGetLastError(nullptr);
  EXPECT_TRUE(r == ncclRemoteError || r == ncclSystemError) << r << ": " << error;
  EXPECT_EQ(comm, nullptr);
  EXPECT_LT(seconds, 5) << "the failure was waited out instead of detected: " << error;
  EXPECT_NE(error.find("bootstrap"), std::string::npos) << error;
  EXPECT_NE(error.find("rank "), std::string::npos) << error;
  ctx.report("error", error);
}

TEST(BootstrapRing, ARankLeavingTheRingFailsTheOthersNamingARank) {
  // BRAID_TIMEOUT_S 30: the survivors must fail by detection, within a few seconds.
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "30"}});
  test::RunReport report = test::runThreads(4, [](RankContext& ctx) {
    if (ctx.rank() != 2) return initMustFailNamingARank(ctx);
    int rootFd = joinThenLeaveTheRing(ctx.id(), 2, 4);
    ASSERT_GE(rootFd, 0) << lastError();
    // The root connection stays open while the others fail: only the ring can tell them.
    std::this_thread::sleep_for(std::chrono::seconds(3));
    close(rootFd);
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
  // Rank 3, whose previous left, names it; the others name the rank their failure reached
  // them from.
  const std::vector<std::string> errors = report.valuesOf("error");
  EXPECT_NE(errors[3].find("rank 2, previous on the ring"), std::string::npos) << errors[3];
  EXPECT_NE(errors[3].find("bootstrap ring"), std::string::npos) << errors[3];
}

TEST(BootstrapRing, AnAbortEndsAWaitOnTheRing) {
  // Rank 1 joins and never links: rank 0 waits on the ring (its previous never connects) until
  // its abort flag is raised.
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "30"}});
  test::RunReport report = test::runThreads(2, [](RankContext& ctx) {
    if (ctx.rank() == 1) {
      int ringPort = -1;
      int rootFd = joinThenLeaveTheRing(ctx.id(), 1, 2, &ringPort);
      ASSERT_GE(rootFd, 0) << lastError();
      std::this_thread::sleep_for(std::chrono::seconds(2));
      close(ringPort);
      close(rootFd);
      return;
    }
    std::atomic<uint32_t> abort{0};
    WaitPolicy policy = policyOf(30);
    policy.abort = &abort;
    std::thread aborter([&abort] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      abort.store(1);
    });
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<Bootstrap> b;
    std::vector<std::string> all;
    ncclResult_t r = Bootstrap::join(ctx.id(), 0, 2, "info", policy, &b, &all);
    const double seconds = secondsSince(start);
    aborter.join();
    EXPECT_EQ(r, ncclInvalidUsage) << lastError();
    EXPECT_NE(lastError().find("aborted"), std::string::npos) << lastError();
    EXPECT_LT(seconds, 1.5) << lastError();
  });
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(BootstrapRing, AProcessDyingAfterJoiningFailsTheOthersNamingIt) {
  test::RunOptions options;
  options.env = {{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "30"}};
  test::RunReport report = test::runProcesses(
      4,
      [](RankContext& ctx) {
        if (ctx.rank() != 1) return initMustFailNamingARank(ctx);
        joinThenLeaveTheRing(ctx.id(), 1, 4);
        _exit(0);  // gone, as a crash would leave it: no goodbye to the root
      },
      options);
  for (int r : {0, 2, 3}) {
    const test::RankResult& rr = report.ranks[r];
    EXPECT_EQ(rr.outcome, test::Outcome::kOk) << report.describe();
  }
  const std::vector<std::string> errors = report.valuesOf("error");
  // Rank 2 (its next) learns it from the ring or from the root; either names rank 1.
  EXPECT_NE(errors[2].find("rank 1"), std::string::npos) << errors[2];
}

}  // namespace
}  // namespace braid
