// The bootstrap root must turn away connections that do not prove the communicator's secret
// (random bytes, a well-formed hello with the wrong secret or nonce, a silent connection) while
// the real ranks, arriving at the same time, still form their communicator.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "harness/harness_internal.h"
#include "harness/rank_harness.h"

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
bool closedByPeer(int fd, double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[256];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

RootHello helloFor(const UniqueIdFields& f) {
  RootHello h{};
  h.magic = kHelloMagic;
  h.version = kBootstrapVersion;
  memcpy(h.secret, f.secret, sizeof(h.secret));
  h.nonce = f.nonce;
  h.nranks = 3;
  h.rank = 0;
  h.infoBytes = 0;
  return h;
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
  std::vector<unsigned char> junk(sizeof(RootHello) + 100);
  for (auto& b : junk) b = static_cast<unsigned char>(rng());
  ASSERT_TRUE(sendBytes(randomFd, junk.data(), junk.size()));
  // 2: a proper hello with one secret byte wrong.
  int wrongSecretFd = connectToRoot(root);
  ASSERT_GE(wrongSecretFd, 0);
  RootHello wrongSecret = helloFor(f);
  wrongSecret.secret[5] ^= 0x10;
  ASSERT_TRUE(sendBytes(wrongSecretFd, &wrongSecret, sizeof(wrongSecret)));
  // 3: the right secret but another communicator's nonce.
  int wrongNonceFd = connectToRoot(root);
  ASSERT_GE(wrongNonceFd, 0);
  RootHello wrongNonce = helloFor(f);
  wrongNonce.nonce ^= 1;
  ASSERT_TRUE(sendBytes(wrongNonceFd, &wrongNonce, sizeof(wrongNonce)));
  // 4: connected, silent.
  int silentFd = connectToRoot(root);
  ASSERT_GE(silentFd, 0);

  EXPECT_TRUE(closedByPeer(randomFd, 5)) << "random bytes were not refused";
  EXPECT_TRUE(closedByPeer(wrongSecretFd, 5)) << "a wrong secret was not refused";
  EXPECT_TRUE(closedByPeer(wrongNonceFd, 5)) << "a wrong nonce was not refused";

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
  EXPECT_TRUE(closedByPeer(silentFd, 5)) << "the silent stranger is still connected";
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
  int impostor = connectToRoot(root);
  ASSERT_GE(impostor, 0);
  RootHello h = helloFor(f);
  h.nranks = 2;
  h.rank = 0;
  memset(h.secret, 0, sizeof(h.secret));
  ASSERT_TRUE(sendBytes(impostor, &h, sizeof(h)));
  EXPECT_TRUE(closedByPeer(impostor, 5));
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

}  // namespace
}  // namespace braid
