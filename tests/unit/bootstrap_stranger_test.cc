// The bootstrap handshake proves the id's secret both ways. The root must turn away connections
// that do not prove it (random bytes, a well-formed handshake with the wrong secret or nonce, a
// silent connection) while the real ranks, arriving at the same time, still form their
// communicator; and a rank must refuse a "root" that cannot prove it, without ever sending it
// the secret.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "core/bootstrap.h"
#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "harness/harness_internal.h"
#include "harness/rank_harness.h"
#include "unit/unit_helpers.h"

namespace braid {
namespace {

int connectToRoot(const SockAddr& root) {
  int fd = socket(root.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&root.storage), root.len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// True when the peer closed the connection within `seconds` (reads until EOF or error).
// A connection that runs the whole handshake as rank `rank` of `nranks` with the id fields `f`
// (which a test may have falsified); the root's proof is not checked, so the root's verdict on
// this side's proof is what the test observes.
int handshakeAs(const SockAddr& root, const UniqueIdFields& f, int nranks, int rank) {
  int fd = connectToRoot(root);
  if (fd < 0) return -1;
  // A well-formed ring address, so the proof is what the root judges.
  SockAddr ring;
  if (parseHostPort("127.0.0.1:9", &ring) != ncclSuccess) return close(fd), -1;
  if (bootstrapHandshake(fd, f, nranks, rank, ring, Deadline::after(5), nullptr,
                         /*verifyRoot=*/false) != ncclSuccess) {
    close(fd);
    return -1;
  }
  return fd;
}

bool sendBytes(int fd, const void* data, size_t len) {
  return send(fd, data, len, MSG_NOSIGNAL) == static_cast<ssize_t>(len);
}

void sumOfRanks(test::RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  int in = ctx.rank() + 1, out = 0;
  if (ncclAllReduce(&in, &out, 1, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
    ctx.fail(ncclGetLastError(comm));
  if (out != 6) ctx.fail("sum " + std::to_string(out));
  ncclCommDestroy(comm);
}

TEST(BootstrapRoot, StrangersAreRejectedWhileRanksFormTheCommunicator) {
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "20"}});
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  UniqueIdFields f;
  SockAddr root;
  ASSERT_EQ(unpackUniqueId(id, &f, &root), ncclSuccess);

  // 1: random bytes, more than a hello.
  int randomFd = connectToRoot(root);
  ASSERT_GE(randomFd, 0);
  std::mt19937 rng(7);
  std::vector<unsigned char> junk(sizeof(AuthHello) + sizeof(RootHello) + 100);
  for (auto& b : junk) b = static_cast<unsigned char>(rng());
  ASSERT_TRUE(sendBytes(randomFd, junk.data(), junk.size()));
  // 2: a proper handshake with one secret byte wrong.
  UniqueIdFields wrongSecret = f;
  wrongSecret.secret[5] ^= 0x10;
  int wrongSecretFd = handshakeAs(root, wrongSecret, 3, 0);
  ASSERT_GE(wrongSecretFd, 0);
  // 3: the right secret but another communicator's nonce.
  UniqueIdFields wrongNonce = f;
  wrongNonce.nonce ^= 1;
  int wrongNonceFd = handshakeAs(root, wrongNonce, 3, 0);
  ASSERT_GE(wrongNonceFd, 0);
  // 4: connected, silent.
  int silentFd = connectToRoot(root);
  ASSERT_GE(silentFd, 0);

  EXPECT_TRUE(unit_test::closedByPeer(randomFd, 5)) << "random bytes were not refused";
  EXPECT_TRUE(unit_test::closedByPeer(wrongSecretFd, 5)) << "a wrong secret was not refused";
  EXPECT_TRUE(unit_test::closedByPeer(wrongNonceFd, 5)) << "a wrong nonce was not refused";

  // 5: one more stranger knocking while the ranks arrive.
  std::thread knocker([&] {
    for (int i = 0; i < 20; i++) {
      int fd = connectToRoot(root);
      if (fd < 0) break;  // the root closed its port: everyone is in
      sendBytes(fd, junk.data(), i % 2 ? junk.size() : 3);
      close(fd);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  test::RunOptions options;
  options.id = id;
  test::RunReport report = test::runThreads(3, sumOfRanks, options);
  knocker.join();
  BRAID_EXPECT_ALL_RANKS_OK(report);
  // Once every rank is in, the root drops whoever is still pending.
  EXPECT_TRUE(unit_test::closedByPeer(silentFd, 5)) << "the silent stranger is still connected";
  for (int fd : {randomFd, wrongSecretFd, wrongNonceFd, silentFd}) close(fd);
}

TEST(BootstrapRoot, StrangersAloneDoNotFormACommunicator) {
  // A stranger that knows the nonce but not the secret cannot take a rank's place: the real
  // rank 0 still gets in, and the two real ranks complete.
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "20"}});
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  UniqueIdFields f;
  SockAddr root;
  ASSERT_EQ(unpackUniqueId(id, &f, &root), ncclSuccess);
  UniqueIdFields noSecret = f;
  memset(noSecret.secret, 0, sizeof(noSecret.secret));
  int impostor = handshakeAs(root, noSecret, 2, 0);
  ASSERT_GE(impostor, 0);
  EXPECT_TRUE(unit_test::closedByPeer(impostor, 5));
  close(impostor);
  test::RunOptions options;
  options.id = id;
  test::RunReport report = test::runThreads(
      2,
      [](test::RankContext& ctx) {
        if (ncclComm_t comm = ctx.initComm()) ncclCommDestroy(comm);
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// More silent connections than the root reads at once (1024) arrive before the ranks: the root
// leaves the rest in its accept queue instead of closing them, so the ranks behind the flood
// wait until the silent ones are dropped (5 s) and then form their communicator.
TEST(BootstrapRoot, AFloodOfSilentConnectionsDelaysTheRanksWithoutTurningThemAway) {
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "30"}});
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
  UniqueIdFields f;
  SockAddr root;
  ASSERT_EQ(unpackUniqueId(id, &f, &root), ncclSuccess);
  std::vector<int> flood;
  for (int i = 0; i < 1100; i++) {
    int fd = connectToRoot(root);
    ASSERT_GE(fd, 0) << "connection " << i;
    flood.push_back(fd);
  }
  test::RunOptions options;
  options.id = id;
  test::RunReport report = test::runThreads(3, sumOfRanks, options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  for (int fd : flood) close(fd);
}

// A process listening where the id points (a stale NCCL_COMM_ID port taken by another program, or
// someone who got there first) answers the handshake with a proof it cannot make. The rank must
// fail init with an error that says so, and must have sent nothing but its opening nonce.
TEST(BootstrapRoot, ARankRefusesARootThatCannotProveTheSecret) {
  test::internal::ScopedEnv env({{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "10"}});
  SockAddr addr;
  ASSERT_EQ(parseHostPort("127.0.0.1:0", &addr), ncclSuccess);
  int listenFd = -1;
  ASSERT_EQ(listenOn(&addr, &listenFd), ncclSuccess) << ncclGetLastError(nullptr);
  UniqueIdFields f{};
  f.magic = kUniqueIdMagic;
  memcpy(f.addr, &addr.storage, addr.len);
  f.addrLen = addr.len;
  for (int i = 0; i < 16; i++) f.secret[i] = static_cast<unsigned char>(0xC0 + i);
  f.nonce = 42;
  std::string heard;
  std::thread fakeRoot([&] {
    int fd = accept(listenFd, nullptr, nullptr);
    if (fd < 0) return;
    AuthHello a;
    if (recv(fd, &a, sizeof(a), MSG_WAITALL) != sizeof(a)) return close(fd), void();
    heard.assign(reinterpret_cast<const char*>(&a), sizeof(a));
    AuthChallenge c{kChallengeMagic, kBootstrapVersion, {}, {}};
    for (size_t i = 0; i < sizeof(c.rootProof); i++) c.rootProof[i] = static_cast<unsigned char>(i);
    sendBytes(fd, &c, sizeof(c));
    char buf[4096];
    for (;;) {  // everything else the rank sends, until it closes
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 3000) <= 0) break;
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      heard.append(buf, n);
    }
    close(fd);
  });
  ncclComm_t comm = nullptr;
  auto start = std::chrono::steady_clock::now();
  ncclResult_t r = ncclCommInitRank(&comm, 2, packUniqueId(f), 1);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string error = ncclGetLastError(nullptr);
  fakeRoot.join();
  close(listenFd);
  EXPECT_NE(r, ncclSuccess);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(error.find("not this communicator's bootstrap root"), std::string::npos) << error;
  EXPECT_LT(seconds, 5) << "the rank waited instead of refusing the root";
  EXPECT_EQ(heard.size(), sizeof(AuthHello)) << "the rank sent more than its opening nonce";
  EXPECT_EQ(heard.find(std::string(reinterpret_cast<const char*>(f.secret), 16)), std::string::npos)
      << "the secret went on the wire";
}

}  // namespace
}  // namespace braid
