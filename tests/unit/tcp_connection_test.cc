// The two ends of a TCP connection on socket pairs, without a communicator: the receiving end
// (tcp_receive_pump.h) must deliver every frame, byte for byte and in order, however the bytes
// arrive (one at a time, frames alternating between sockets, a full FIFO, claimed landings),
// and report a closed socket naming the peer (to the wait that needs it, not to one that
// pulled it by the way); the sending end (tcp_send_engine.h) must put
// small slots on the wire from the posting thread before post() returns, and every slot,
// inline, queued behind a full socket or lent, on the wire exactly once and in order.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/tcp.h>  // struct tcp_info with tcpi_segs_out (glibc's stops before it)
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "transports/tcp/tcp_receive_pump.h"
#include "transports/tcp/tcp_send_engine.h"
#include "unit/unit_helpers.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr size_t kSlotBytes = 4096;

struct SocketPairs {
  std::vector<int> near, far;  // near: given to the end under test; far: the test's
  explicit SocketPairs(int n, int bufferBytes = 0) {
    for (int i = 0; i < n; i++) {
      int sv[2];
      EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
      if (bufferBytes > 0)
        for (int fd : sv) {
          setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
          setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof(bufferBytes));
        }
      near.push_back(sv[0]);
      far.push_back(sv[1]);
    }
  }
  ~SocketPairs() {
    for (int fd : far) close(fd);
  }
};

struct Frame {
  SlotInfo info;
  std::string payload;
};

// Frames of sizes that matter: empty, one byte, odd, a full slot; payloads from the seed.
std::vector<Frame> makeFrames(int count, unsigned seed) {
  std::mt19937 rng(seed);
  const size_t sizes[] = {0, 1, 7, 8, 61, 1031, kSlotBytes - 1, kSlotBytes};
  std::vector<Frame> frames;
  for (int i = 0; i < count; i++) {
    Frame f;
    const size_t bytes = sizes[rng() % std::size(sizes)];
    f.info = SlotInfo{static_cast<uint32_t>(bytes), 2u * i + 1, {rng(), rng(), uint64_t(i)}};
    f.payload.resize(bytes);
    for (char& c : f.payload) c = static_cast<char>(rng());
    frames.push_back(f);
  }
  return frames;
}

std::string wireBytes(const Frame& f) {
  std::string s(reinterpret_cast<const char*>(&f.info), sizeof(f.info));
  return s + f.payload;
}

// Frame k goes on socket k % n; each frame's bytes are written one at a time (with a pause
// every few bytes), so the reader meets every possible partial header and payload.
void writeTrickling(const std::vector<int>& fds, const std::vector<std::string>& wire) {
  for (size_t k = 0; k < wire.size(); k++) {
    const int fd = fds[k % fds.size()];
    for (size_t i = 0; i < wire[k].size(); i++) {
      ASSERT_EQ(send(fd, &wire[k][i], 1, MSG_NOSIGNAL), 1);
      if (i % 509 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

// Joins its thread when the test leaves, also through a failed assertion; declared before the
// connection end, so that end (closing its sockets) goes first and a blocked peer thread ends.
struct Joined {
  std::thread thread;
  ~Joined() {
    if (thread.joinable()) thread.join();
  }
};

TEST(TcpReceivePump, DeliversFramesTricklingInOverTwoSockets) {
  SocketPairs pairs(2);
  const std::vector<Frame> frames = makeFrames(40, 7);
  std::vector<std::string> wire;
  for (size_t k = 0; k < frames.size(); k++) {
    wire.push_back(wireBytes(frames[k]));
    // A status frame after every fifth slot: consumed, never a slot.
    if (k % 5 == 4) {
      SlotInfo status{24, 0xfffffffeu, {11, 22, 33}};
      wire.push_back(std::string(reinterpret_cast<const char*>(&status), sizeof(status)) +
                     std::string(24, '\x5a'));
    }
  }
  constexpr uint32_t kSlots = 2;
  Joined writer;
  TcpReceivePump pump(pairs.near, kSlots, kSlotBytes, /*peer=*/3, /*peerOnThisHost=*/true);
  FifoReceiver rx;
  rx.attach(pump.fifo(), &pump, /*acceptsClaims=*/true, &pump);
  writer.thread = std::thread([&] { writeTrickling(pairs.far, wire); });
  // Every third frame is claimed into a buffer of the test's own, as an algorithm lands final
  // data (the first positions at the start, each later one as the slot before it is released):
  // it must arrive there, not in the slot.
  std::vector<std::string> landed(frames.size());
  for (size_t k = 0; k < frames.size(); k++)
    if (k % 3 == 0) landed[k].assign(frames[k].payload.size() + 1, '\x7f');  // + 1 poisoned
  auto claimed = [&](size_t k) { return k < frames.size() && k % 3 == 0; };
  for (uint32_t k = 0; k < kSlots; k++) {
    if (claimed(k)) {
      ASSERT_TRUE(rx.claim(k, landed[k].data(), frames[k].info));
    }
  }
  const WaitPolicy policy = unit_test::testPolicy();
  for (size_t k = 0; k < frames.size(); k++) {
    const void* slot = nullptr;
    SlotInfo info;
    ASSERT_EQ(rx.wait(policy, &slot, &info), ncclSuccess) << "frame " << k << ": " << lastError();
    ASSERT_EQ(memcmp(&info, &frames[k].info, sizeof(info)), 0) << "frame " << k;
    const void* data = rx.landedPayload(slot);
    if (k % 3 == 0) {
      ASSERT_EQ(data, landed[k].data()) << "frame " << k << " did not land where claimed";
      ASSERT_EQ(landed[k].back(), '\x7f') << "frame " << k << " wrote past its claim";
    }
    ASSERT_EQ(memcmp(data, frames[k].payload.data(), info.bytes), 0) << "frame " << k;
    // Slow consumer now and then: the FIFO (2 slots) fills and the pull must stop, not drop.
    if (k % 7 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const size_t next = k + kSlots;
    if (claimed(next))
      rx.releaseAndClaim(landed[next].data(), frames[next].info);
    else
      rx.release();
  }
  writer.thread.join();
  pump.pull();  // the last status frame follows the last slot
  uint64_t status[kFifoStatusWords];
  ASSERT_TRUE(rx.peerStatus(status));
  EXPECT_EQ(status[0], 11u);
  EXPECT_EQ(status[2], 33u);
}

TEST(TcpReceivePump, ClosedSocketIsAnErrorNamingThePeer) {
  SocketPairs pairs(1);
  TcpReceivePump pump(pairs.near, 4, kSlotBytes, /*peer=*/5, /*peerOnThisHost=*/true);
  FifoReceiver rx;
  rx.attach(pump.fifo(), &pump, true, &pump);
  // Half a header, then the peer goes away.
  ASSERT_EQ(send(pairs.far[0], "abcdefgh", 8, MSG_NOSIGNAL), 8);
  close(pairs.far[0]);
  pairs.far.clear();
  const void* slot = nullptr;
  SlotInfo info;
  const auto start = std::chrono::steady_clock::now();
  ncclResult_t r = rx.wait(unit_test::testPolicy(), &slot, &info);
  EXPECT_EQ(r, ncclRemoteError);
  EXPECT_NE(lastError().find("rank 5"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("closed by peer"), std::string::npos) << lastError();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// A peer that sends its last frame and closes: the frame arrives and the wait for it succeeds,
// leaving the caller's last error as it was, although the same pull met the close; the next wait
// fails, naming the peer and the close.
TEST(TcpReceivePump, APeerClosingAfterItsLastFrameFailsOnlyTheNextWait) {
  SocketPairs pairs(2);
  const std::vector<Frame> frames = makeFrames(1, 3);
  const std::string wire = wireBytes(frames[0]);
  ASSERT_EQ(send(pairs.far[0], wire.data(), wire.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(wire.size()));
  for (int fd : pairs.far) close(fd);
  pairs.far.clear();
  TcpReceivePump pump(pairs.near, 4, kSlotBytes, /*peer=*/6, /*peerOnThisHost=*/true);
  FifoReceiver rx;
  rx.attach(pump.fifo(), &pump, true, &pump);
  setLastError("an earlier call's error");
  const void* slot = nullptr;
  SlotInfo info{};
  ASSERT_EQ(rx.wait(unit_test::testPolicy(), &slot, &info), ncclSuccess) << lastError();
  EXPECT_EQ(memcmp(rx.landedPayload(slot), frames[0].payload.data(), info.bytes), 0);
  EXPECT_EQ(lastError(), "an earlier call's error");
  rx.release();
  EXPECT_EQ(rx.wait(unit_test::testPolicy(), &slot, &info), ncclRemoteError);
  EXPECT_NE(lastError().find("rank 6"), std::string::npos) << lastError();
  EXPECT_NE(lastError().find("closed by peer"), std::string::npos) << lastError();
  clearLastError();
}

// A TCP connection over loopback: {the accepted end, the connecting end}.
std::pair<int, int> loopbackTcpPair() {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(listener, 1), 0);
  EXPECT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int out = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_EQ(connect(out, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const int in = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  close(listener);
  return {in, out};
}

// Runs on `cpu` alone until it goes out of scope, then on the CPUs it had.
struct PinnedTo {
  cpu_set_t before;
  explicit PinnedTo(int cpu) {
    sched_getaffinity(0, sizeof(before), &before);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    EXPECT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  }
  ~PinnedTo() { sched_setaffinity(0, sizeof(before), &before); }
};

// Two ranks the scheduler put on one core: the receiving end tells from the core loopback TCP
// processed the sender's packets on (the sender's own), so a wait yields the core instead of
// spinning; a sender on another core, or on another host, is not on this core.
TEST(TcpReceivePump, TellsASenderOnThisCoreFromOneElsewhere) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  auto [in, out] = loopbackTcpPair();
  TcpReceivePump here(std::vector<int>{in}, 4, kSlotBytes, /*peer=*/1, /*peerOnThisHost=*/true);
  auto [in2, out2] = loopbackTcpPair();
  TcpReceivePump remote(std::vector<int>{in2}, 4, kSlotBytes, /*peer=*/2,
                        /*peerOnThisHost=*/false);
  {
    PinnedTo pin(cpus[0]);
    ASSERT_EQ(send(out, "x", 1, MSG_NOSIGNAL), 1);
    ASSERT_EQ(send(out2, "x", 1, MSG_NOSIGNAL), 1);
    EXPECT_TRUE(here.senderOnThisCore());
    EXPECT_FALSE(remote.senderOnThisCore()) << "a sender on another host is never on this core";
  }
  if (cpus.size() > 1) {
    std::thread elsewhere([&, cpu = cpus[1]] {
      PinnedTo pin(cpu);
      EXPECT_EQ(send(out, "y", 1, MSG_NOSIGNAL), 1);
    });
    elsewhere.join();
    PinnedTo pin(cpus[0]);
    EXPECT_FALSE(here.senderOnThisCore()) << "the sender ran on CPU " << cpus[1];
  }
  close(out);
  close(out2);
}

// Small frames, each sent once the one before it was taken (a ping-pong, as small collectives
// are): the receiving socket, which never sends data, acknowledges about every second one
// instead of each at once (preferDelayedAcks), renewed through the whole run.
TEST(TcpReceivePump, AcknowledgesSmallFramesEverySecondOne) {
  auto [in, out] = loopbackTcpPair();
  const int one = 1;
  setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  TcpReceivePump pump(std::vector<int>{in}, 4, kSlotBytes, /*peer=*/1, /*peerOnThisHost=*/true);
  FifoReceiver rx;
  rx.attach(pump.fifo(), &pump, true, &pump);
  auto segmentsSent = [fd = in] {
    tcp_info info{};
    socklen_t len = sizeof(info);
    EXPECT_EQ(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len), 0);
    return info.tcpi_segs_out;
  };
  constexpr int kFrames = 400;
  const uint32_t before = segmentsSent();
  std::atomic<int> taken{0};
  Joined writer;
  writer.thread = std::thread([&] {
    for (int k = 0; k < kFrames; k++) {
      const std::string wire = wireBytes(Frame{SlotInfo{8, 2u * k + 1, {}}, std::string(8, 'a')});
      if (send(out, wire.data(), wire.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(wire.size()))
        return;
      while (taken.load() <= k) std::this_thread::yield();
    }
  });
  for (int k = 0; k < kFrames; k++) {
    const void* slot = nullptr;
    SlotInfo info{};
    ASSERT_EQ(rx.wait(unit_test::testPolicy(), &slot, &info), ncclSuccess) << lastError();
    ASSERT_EQ(info.tag, 2u * k + 1);
    rx.release();
    taken.store(k + 1);
  }
  writer.thread.join();
  const uint32_t acks = segmentsSent() - before;
  EXPECT_LT(acks, kFrames * 3 / 4)
      << "the receiving socket sent " << acks << " segments for " << kFrames << " frames";
  close(out);
}

// Reads frames in order from the far ends (frame k on socket k % n) until `count` arrived.
std::vector<Frame> readFrames(const std::vector<int>& fds, size_t count) {
  std::vector<Frame> got;
  for (size_t k = 0; k < count; k++) {
    const int fd = fds[k % fds.size()];
    Frame f;
    if (recv(fd, &f.info, sizeof(f.info), MSG_WAITALL) != sizeof(f.info)) break;
    f.payload.resize(f.info.bytes);
    if (f.info.bytes &&
        recv(fd, f.payload.data(), f.info.bytes, MSG_WAITALL) != static_cast<ssize_t>(f.info.bytes))
      break;
    got.push_back(f);
  }
  return got;
}

TEST(TcpSendEngine, SmallSlotIsOnTheWireWhenPostReturns) {
  // The connection's thread needs microseconds to wake; a slot sent inline is readable at once.
  // Twenty in a row leave no room for luck (with BRAID_TCP_INLINE_BYTES=0 this fails).
  SocketPairs pairs(2);
  TcpSendEngine engine(pairs.near, 4, kSlotBytes, /*inlineBytes=*/1024, /*peer=*/1);
  FifoSender tx;
  tx.attach(engine.fifo(), &engine, true, &engine);
  const WaitPolicy policy = unit_test::testPolicy();
  const std::vector<Frame> frames = makeFrames(20, 3);
  for (size_t k = 0; k < frames.size(); k++) {
    if (frames[k].info.bytes > 1024) continue;
    void* slot = nullptr;
    ASSERT_EQ(tx.acquire(policy, &slot), ncclSuccess);
    memcpy(slot, frames[k].payload.data(), frames[k].info.bytes);
    tx.post(frames[k].info);
    const int fd = pairs.far[(tx.posted() - 1) % 2];
    std::string got(sizeof(SlotInfo) + frames[k].info.bytes, '\0');
    ASSERT_EQ(recv(fd, got.data(), got.size(), MSG_DONTWAIT), static_cast<ssize_t>(got.size()))
        << "slot " << k << " (" << frames[k].info.bytes << " B) was not sent by post()";
    EXPECT_EQ(got, wireBytes(frames[k]));
  }
}

TEST(TcpSendEngine, EverySlotArrivesOnceInOrderThroughFullSockets) {
  // Small socket buffers and a slow reader: inline sends meet a full socket, the rest queue
  // behind it for the connection's thread; lent slots are sent from the poster's memory.
  SocketPairs pairs(2, /*bufferBytes=*/4096);
  Joined reader;
  TcpSendEngine engine(pairs.near, 4, kSlotBytes, /*inlineBytes=*/2048, /*peer=*/1);
  FifoSender tx;
  tx.attach(engine.fifo(), &engine, true, &engine);
  const std::vector<Frame> frames = makeFrames(300, 11);
  std::vector<Frame> got;
  reader.thread = std::thread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the sockets fill first
    got = readFrames(pairs.far, frames.size());
  });
  const WaitPolicy policy = unit_test::testPolicy();
  for (size_t k = 0; k < frames.size(); k++) {
    void* slot = nullptr;
    ASSERT_EQ(tx.acquire(policy, &slot), ncclSuccess) << lastError();
    if (k % 4 == 1) {
      tx.postLent(frames[k].payload.data(), frames[k].info);
    } else {
      memcpy(slot, frames[k].payload.data(), frames[k].info.bytes);
      tx.post(frames[k].info);
    }
  }
  ASSERT_EQ(tx.waitReleased(policy), ncclSuccess) << lastError();
  reader.thread.join();
  ASSERT_EQ(got.size(), frames.size());
  for (size_t k = 0; k < frames.size(); k++) {
    ASSERT_EQ(memcmp(&got[k].info, &frames[k].info, sizeof(SlotInfo)), 0) << "frame " << k;
    ASSERT_EQ(got[k].payload, frames[k].payload) << "frame " << k;
  }
}

TEST(TcpSendEngine, PeerGoneIsAnErrorNamingThePeer) {
  SocketPairs pairs(1);
  TcpSendEngine engine(pairs.near, 2, kSlotBytes, 1024, /*peer=*/4);
  FifoSender tx;
  tx.attach(engine.fifo(), &engine, true, &engine);
  close(pairs.far[0]);
  pairs.far.clear();
  const WaitPolicy policy = unit_test::testPolicy();
  ncclResult_t r = ncclSuccess;
  std::vector<char> data(kSlotBytes, 1);
  for (int k = 0; k < 8 && r == ncclSuccess; k++) {
    void* slot = nullptr;
    r = tx.acquire(policy, &slot);
    if (r == ncclSuccess) tx.post(SlotInfo{kSlotBytes, 1, {}});
  }
  if (r == ncclSuccess) r = tx.waitReleased(policy);
  EXPECT_EQ(r, ncclRemoteError);
  EXPECT_EQ(engine.check(), ncclRemoteError);
  EXPECT_NE(lastError().find("rank 4"), std::string::npos) << lastError();
}

}  // namespace
}  // namespace braid
