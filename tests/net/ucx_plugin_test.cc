// The UCX net plugin (transports/net/ucx) through NCCL's net-plugin interface alone, as NVIDIA's
// NCCL would call it: each single-version library (libnccl-net-ucxv8.so .. v11) loaded with
// dlopen, the two ends of every connection in two threads of this process, UCX on its TCP
// transport (UCX_TLS=tcp: any machine has it) unless a test says otherwise. Per version: the
// properties, a connection, sizes from 0 to 16 MiB (eager and rendezvous) in flight together and
// exact, receives larger than their message (the size received reported), tags honoured out of
// order, a closed or killed peer failing a pending receive within seconds, CUDA memory refused,
// a connect to nobody failing or waiting without harm, no plugin thread left once it is unloaded.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "net/net_pair.h"

extern char** environ;

#if defined(__SANITIZE_ADDRESS__)
// LeakSanitizer crashes ("Tracer caught signal 11") reading the dynamic TLS of a UCX thread that
// outlives the UCX modules which ucp_cleanup and dlclose unload: the TLS is left out of its scan.
extern "C" const char* __lsan_default_options() {
  return "use_tls=0";
}
#endif

namespace braid::nettest {
namespace {

const char* variantPath(int version) {
  switch (version) {
    case 8:
      return UCX_V8;
    case 9:
      return UCX_V9;
    case 10:
      return UCX_V10;
    default:
      return UCX_V11;
  }
}

constexpr size_t kMiB = 1 << 20;

class UcxPlugin : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    setenv("UCX_TLS", "tcp", 1);
    std::string error;
    net_ = NetApi::load(variantPath(GetParam()), GetParam(), &error);
    ASSERT_TRUE(net_) << error;
    EXPECT_EQ(net_->name, "UCX");
  }
  // Loaded and initialised with the environment as it is now.
  void start() { ASSERT_EQ(net_->init(), ncclSuccess); }
  void TearDown() override {
    if (net_) {
      closePair(*net_, &pair_);
      EXPECT_EQ(net_->finalize(), ncclSuccess);
    }
  }
  void connect() {
    const std::string error = connectPair(*net_, &pair_);
    ASSERT_EQ(error, "");
  }
  // Waits for a pending request to fail; the seconds it took, or -1 if it completed or timed out.
  double secondsUntilFails(void* request) {
    const auto start = Clock::now();
    while (Clock::now() < start + kDeadline) {
      int done = 0, size = 0;
      const Result r = net_->test(request, &done, &size);
      if (r == ncclRemoteError || r == ncclSystemError)
        return std::chrono::duration<double>(Clock::now() - start).count();
      if (r != ncclSuccess || done) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return -1;
  }

  // Posts a request the peer never answers (a receive, or a send large enough to wait for its
  // receive: UCX's rendezvous), closes the other end, and expects the request to fail in < 5 s.
  void expectFailsWhenPeerCloses(bool pendingReceive) {
    start();
    connect();
    ASSERT_EQ(exchange(*net_, pair_, {{100, 100, 1}}, {0}), "");  // both ends wired up
    void* comm = pendingReceive ? pair_.recvComm : pair_.sendComm;
    std::vector<char> buffer(16 * kMiB);
    void* mh = nullptr;
    void* req = nullptr;
    ASSERT_EQ(net_->regMr(comm, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh), ncclSuccess);
    while (!req) {
      const Result r = pendingReceive
                           ? net_->irecv(comm, buffer.data(), buffer.size(), 2, mh, &req)
                           : net_->isend(comm, buffer.data(), buffer.size(), 2, mh, &req);
      ASSERT_EQ(r, ncclSuccess);
    }
    int done = 0;
    ASSERT_EQ(net_->test(req, &done, nullptr), ncclSuccess);
    ASSERT_EQ(done, 0);
    void*& other = pendingReceive ? pair_.sendComm : pair_.recvComm;
    ASSERT_EQ(pendingReceive ? net_->closeSend(other) : net_->closeRecv(other), ncclSuccess);
    other = nullptr;
    const double s = secondsUntilFails(req);
    EXPECT_GE(s, 0) << "the request neither failed nor was left alone";
    EXPECT_LT(s, 5);
    net_->deregMr(comm, mh);
  }

  std::unique_ptr<NetApi> net_;
  Pair pair_;
};

// A peer that closes or dies while requests wait on it (a fixture of its own: other versions).
class UcxPeerLoss : public UcxPlugin {};

TEST_P(UcxPlugin, DevicesAndProperties) {
  start();
  int ndev = 0;
  ASSERT_EQ(net_->devices(&ndev), ncclSuccess);
  ASSERT_EQ(ndev, 1);
  Props p;
  ASSERT_EQ(net_->properties(0, &p), ncclSuccess);
  EXPECT_FALSE(p.name.empty());
  EXPECT_EQ(p.ptrSupport, NCCL_PTR_HOST);
  EXPECT_GT(p.speed, 0);
  EXPECT_GE(p.maxComms, 1024);
  EXPECT_EQ(p.maxRecvs, 1);
  EXPECT_EQ(p.latency, 0);
  if (GetParam() >= 9) {
    EXPECT_GE(p.maxP2pBytes, size_t(1) << 40);
    EXPECT_GE(p.maxCollBytes, size_t(1) << 40);
  }
  if (GetParam() >= 11) {
    EXPECT_EQ(p.maxMultiRequestSize, 1);
  }
  EXPECT_TRUE(Log::get().contains("UCX 1.")) << "init logs UCX's version";
}

TEST_P(UcxPlugin, EverySizeExactAllInFlightInOrder) {
  start();
  connect();
  const std::vector<Message> msgs = {
      {0, 0, 7}, {1, 1, 7}, {4097, 4097, 7}, {kMiB + 3, kMiB + 3, 7}, {16 * kMiB, 16 * kMiB, 7}};
  EXPECT_EQ(exchange(*net_, pair_, msgs, {0, 1, 2, 3, 4}), "");
  // The connection is still good afterwards: once more, the other way round in size.
  EXPECT_EQ(exchange(*net_, pair_, {msgs.rbegin(), msgs.rend()}, {0, 1, 2, 3, 4}), "");
}

TEST_P(UcxPlugin, ReceiveLargerThanMessageReportsSizeReceived) {
  start();
  connect();
  // Eager (small) and rendezvous (large) messages into buffers larger than themselves.
  EXPECT_EQ(exchange(*net_, pair_,
                     {{0, 64, 1}, {100, 4097, 1}, {kMiB + 3, 4 * kMiB, 1}, {5, 16 * kMiB, 1}},
                     {0, 1, 2, 3}),
            "");
}

TEST_P(UcxPlugin, TagsHonouredWhateverTheOrderOfReceives) {
  start();
  connect();
  // Sent 5, 9, 5, 9; received 9 first: each message reaches the receive of its tag, in the order
  // sent among those of one tag.
  EXPECT_EQ(exchange(*net_, pair_, {{10, 10, 5}, {kMiB, kMiB, 9}, {3000, 3000, 5}, {1, 1, 9}},
                     {1, 3, 0, 2}),
            "");
}

TEST_P(UcxPlugin, FlushIsNotNeededForHostMemory) {
  start();
  connect();
  char buffer[8];
  void* req = reinterpret_cast<void*>(1);
  EXPECT_EQ(net_->iflush(pair_.recvComm, buffer, sizeof(buffer), nullptr, &req), ncclSuccess);
  EXPECT_EQ(req, nullptr);
}

TEST_P(UcxPlugin, CudaMemoryRefused) {
  start();
  connect();
  char buffer[64];
  void* mh = nullptr;
  EXPECT_EQ(net_->regMr(pair_.sendComm, buffer, sizeof(buffer), NCCL_PTR_CUDA, &mh),
            ncclInternalError);
  EXPECT_TRUE(Log::get().contains("host memory only")) << "the refusal says why";
}

TEST_P(UcxPeerLoss, ClosedSenderFailsPendingReceive) {
  expectFailsWhenPeerCloses(/*pendingReceive=*/true);
}

TEST_P(UcxPeerLoss, ClosedReceiverFailsPendingSend) {
  expectFailsWhenPeerCloses(/*pendingReceive=*/false);
}

TEST_P(UcxPeerLoss, EverythingSentBeforeCloseArrives) {
  setenv("UCX_RNDV_THRESH", "inf", 1);  // every send eager: complete before any receive
  start();
  unsetenv("UCX_RNDV_THRESH");
  connect();
  // The sender sends, sees its sends complete and closes at once; the receiver takes the
  // messages only once it knows the sender is gone (a receive nobody sends to has failed).
  const size_t sizes[] = {1, 4097, kMiB + 3, 0};
  constexpr int kMessages = 24;
  std::vector<std::vector<unsigned char>> out(kMessages), in(kMessages);
  for (int i = 0; i < kMessages; i++) {
    out[i].resize(sizes[i % 4] + 1);
    for (size_t b = 0; b < sizes[i % 4]; b++) out[i][b] = patternByte(b, i);
    in[i].assign(sizes[i % 4] + 1, kPoison);
  }
  std::string sendError;
  std::thread sender([&] {
    std::vector<void*> req(kMessages, nullptr);
    for (int i = 0; i < kMessages && sendError.empty(); i++)
      while (!req[i] && sendError.empty())
        if (net_->isend(pair_.sendComm, out[i].data(), sizes[i % 4], 3, nullptr, &req[i]))
          sendError = "isend failed";
    const auto end = Clock::now() + kDeadline;
    for (int left = kMessages; left > 0 && sendError.empty() && Clock::now() < end;)
      for (void*& r : req) {
        int done = 0;
        if (r && net_->test(r, &done, nullptr) != ncclSuccess) sendError = "test failed";
        if (done) r = nullptr, left--;
      }
    net_->closeSend(pair_.sendComm);
  });
  char probe[8];
  void* req = nullptr;
  while (!req) ASSERT_EQ(net_->irecv(pair_.recvComm, probe, sizeof(probe), 99, nullptr, &req), 0);
  const double s = secondsUntilFails(req);
  sender.join();
  pair_.sendComm = nullptr;
  ASSERT_EQ(sendError, "");
  ASSERT_GE(s, 0) << "the receive nobody sends to did not fail after the sender closed";
  for (int i = 0; i < kMessages; i++) {
    req = nullptr;
    int done = 0, size = -1;
    while (!req)
      ASSERT_EQ(net_->irecv(pair_.recvComm, in[i].data(), in[i].size(), 3, nullptr, &req), 0);
    while (!done) ASSERT_EQ(net_->test(req, &done, &size), ncclSuccess) << "message " << i;
    EXPECT_EQ(size, static_cast<int>(sizes[i % 4])) << "message " << i;
    for (size_t b = 0; b < sizes[i % 4]; b++)
      if (in[i][b] != patternByte(b, i)) FAIL() << "message " << i << " byte " << b;
  }
}

TEST_P(UcxPeerLoss, KilledPeerProcessFailsPendingReceive) {
  start();
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  ASSERT_EQ(net_->listen(handle, &pair_.listenComm), ncclSuccess);
  std::string hex;
  for (unsigned char c : handle) {
    char two[3];
    snprintf(two, sizeof(two), "%02x", c);
    hex += two;
  }
  const std::string version = std::to_string(GetParam());
  const char* argv[] = {NET_PEER, variantPath(GetParam()), version.c_str(), hex.c_str(), nullptr};
  pid_t child = -1;
  ASSERT_EQ(posix_spawn(&child, NET_PEER, nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  const auto end = Clock::now() + kDeadline;
  Result r = ncclSuccess;
  while (!pair_.recvComm && Clock::now() < end && r == ncclSuccess)
    r = net_->accept(pair_.listenComm, &pair_.recvComm);
  std::vector<char> buffer(4096);
  void* mh = nullptr;
  void* req = nullptr;
  int done = 0, size = 0;
  if (pair_.recvComm) {
    // The peer's message first (the connection carries data), then a receive it never sends.
    EXPECT_EQ(net_->regMr(pair_.recvComm, buffer.data(), buffer.size(), NCCL_PTR_HOST, &mh),
              ncclSuccess);
    while (!req) EXPECT_EQ(net_->irecv(pair_.recvComm, buffer.data(), 64, 1, mh, &req), 0);
    while (!done && Clock::now() < end && net_->test(req, &done, &size) == ncclSuccess) {
    }
    EXPECT_EQ(done, 1);
    EXPECT_STREQ(buffer.data(), "from the peer");
    req = nullptr;
    while (!req) EXPECT_EQ(net_->irecv(pair_.recvComm, buffer.data(), 64, 2, mh, &req), 0);
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(pair_.recvComm) << "the peer never connected (accept returned " << r << ")";
  const double s = secondsUntilFails(req);
  EXPECT_GE(s, 0) << "the receive neither failed nor was left alone";
  EXPECT_LT(s, 5);
  net_->deregMr(pair_.recvComm, mh);
}

TEST_P(UcxPlugin, ConnectToNobodyFailsOrWaitsHarmlessly) {
  start();
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listenComm = nullptr;
  ASSERT_EQ(net_->listen(handle, &listenComm), ncclSuccess);
  ASSERT_EQ(net_->closeListen(listenComm), ncclSuccess);  // its port now refuses
  void* sendComm = nullptr;
  Result r = ncclSuccess;
  const auto end = Clock::now() + std::chrono::seconds(2);
  while (!sendComm && r == ncclSuccess && Clock::now() < end) r = net_->connect(handle, &sendComm);
  EXPECT_EQ(sendComm, nullptr);
  EXPECT_TRUE(r == ncclSuccess || r == ncclRemoteError || r == ncclSystemError) << r;
}

TEST_P(UcxPlugin, DefaultTransportsToo) {
  unsetenv("UCX_TLS");  // shared memory within a host, whatever UCX finds
  start();
  connect();
  EXPECT_EQ(
      exchange(*net_, pair_, {{0, 0, 3}, {4097, 8192, 3}, {16 * kMiB, 16 * kMiB, 3}}, {0, 1, 2}),
      "");
}

auto versionName = [](const auto& info) { return "v" + std::to_string(info.param); };
INSTANTIATE_TEST_SUITE_P(Versions, UcxPlugin, ::testing::Values(8, 9, 10, 11), versionName);
// Closing and dying take one path whatever the version: the oldest and newest call shapes.
INSTANTIATE_TEST_SUITE_P(Versions, UcxPeerLoss, ::testing::Values(8, 11), versionName);

// v11 is initialised once per communicator: two contexts at once, each with its connections,
// finalized one after the other.
TEST(UcxPluginV11, SeveralContexts) {
  setenv("UCX_TLS", "tcp", 1);
  std::string error;
  auto a = NetApi::load(UCX_V11, 11, &error);
  auto b = NetApi::load(UCX_V11, 11, &error);  // the same library, a second context
  ASSERT_TRUE(a && b) << error;
  ASSERT_EQ(a->init(), ncclSuccess);
  ASSERT_EQ(b->init(), ncclSuccess);
  Pair pa, pb;
  ASSERT_EQ(connectPair(*a, &pa), "");
  ASSERT_EQ(connectPair(*b, &pb), "");
  EXPECT_EQ(exchange(*a, pa, {{kMiB, kMiB, 1}}, {0}), "");
  closePair(*a, &pa);
  ASSERT_EQ(a->finalize(), ncclSuccess);  // the other communicator's context goes on
  EXPECT_EQ(exchange(*b, pb, {{4097, 4097, 1}, {16 * kMiB, 16 * kMiB, 1}}, {0, 1}), "");
  closePair(*b, &pb);
  EXPECT_EQ(b->finalize(), ncclSuccess);
  // And a context made after the last one ended starts UCX again.
  ASSERT_EQ(a->init(), ncclSuccess);
  ASSERT_EQ(connectPair(*a, &pa), "");
  EXPECT_EQ(exchange(*a, pa, {{1, 1, 1}}, {0}), "");
  closePair(*a, &pa);
  EXPECT_EQ(a->finalize(), ncclSuccess);
}

// The library NCCL_NET_PLUGIN=ucx finds exports every version, each named UCX.
TEST(UcxPluginLibrary, ExportsV8ToV11) {
  for (int version : {8, 9, 10, 11}) {
    std::string error;
    auto net = NetApi::load(UCX_PLUGIN, version, &error);
    ASSERT_TRUE(net) << error;
    EXPECT_EQ(net->name, "UCX");
  }
}

// Threads of this process named `name` (/proc/self/task/*/comm).
int threadsNamed(const std::string& name) {
  int count = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) count++;
  }
  return count;
}

// The plugin's flusher thread (started by a completed send) has ended by the time the library is
// unloaded, whether or not the version has a finalize: a thread left running in an unloaded
// library crashes the process at its next wake-up.
TEST_P(UcxPlugin, UnloadingLeavesNoThreadBehind) {
  start();
  connect();
  ASSERT_EQ(exchange(*net_, pair_, {{4097, 4097, 1}}, {0}), "");
  EXPECT_EQ(threadsNamed("braid-ucx-flush"), 1) << "a completed send starts the flusher";
  closePair(*net_, &pair_);
  EXPECT_EQ(net_->finalize(), ncclSuccess);
  net_.reset();  // dlclose
  EXPECT_EQ(threadsNamed("braid-ucx-flush"), 0);
}

}  // namespace
}  // namespace braid::nettest
