// The UCX plugin in this process, at its v8 interface: a send that test() reported complete must
// reach its receiver even when the sender never calls the plugin again. Over TCP, UCX completes
// a send once it copied the bytes; what the socket could not take at once (the receiver not
// reading, its buffers full) waits in UCX's endpoint until the sender's worker is progressed. A
// rank that finished sending to one peer and went on to wait for another would leave that tail
// behind for ever, and the first peer would wait for it: a deadlock across ranks (seen as a
// broadcast timing out between network namespaces). Small socket buffers make the socket fill
// after a few messages; the receiver reads only after the sender has stopped.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "transports/net/net_plugin_api.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMessageBytes = 4096;
constexpr int kMaxMessages = 256;

// Tests `request` until it completes or `seconds` passed; whether it completed.
bool completes(const ncclNet_v8_t* net, void* request, double seconds, int* size = nullptr) {
  const auto until = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < until) {
    int done = 0;
    EXPECT_EQ(net->test(request, &done, size), ncclSuccess);
    if (done) return true;
  }
  return false;
}

TEST(UcxStall, CompletedSendsArriveAfterTheSenderStopsCallingThePlugin) {
  setenv("UCX_TLS", "tcp", 1);
  setenv("UCX_NET_DEVICES", "lo", 1);
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  setenv("UCX_TCP_SNDBUF", "4k", 1);
  setenv("UCX_TCP_RCVBUF", "4k", 1);
  void* lib = dlopen(UCX_V8, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  const auto* net = static_cast<const ncclNet_v8_t*>(dlsym(lib, "ncclNetPlugin_v8"));
  ASSERT_NE(net, nullptr);
  ASSERT_EQ(net->init(nullptr), ncclSuccess);

  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = nullptr;
  ASSERT_EQ(net->listen(0, handle, &listenComm), ncclSuccess);
  void* sendComm = nullptr;
  void* recvComm = nullptr;
  ncclNetDeviceHandle_v8_t* unused = nullptr;
  for (auto until = Clock::now() + std::chrono::seconds(20);
       (!sendComm || !recvComm) && Clock::now() < until;) {
    if (!sendComm) {
      ASSERT_EQ(net->connect(0, handle, &sendComm, &unused), ncclSuccess);
    }
    if (!recvComm) {
      ASSERT_EQ(net->accept(listenComm, &recvComm, &unused), ncclSuccess);
    }
  }
  ASSERT_TRUE(sendComm && recvComm) << "the plugin did not connect in 20 s";

  // A first message both ways through (each side progressed), so that UCX's wire-up is done.
  void* mh = nullptr;
  {
    char out = 42, in = 0;
    void* data = &in;
    int size = 1, tag = 0;
    void *send = nullptr, *recv = nullptr;
    ASSERT_EQ(net->isend(sendComm, &out, 1, 0, mh, &send), ncclSuccess);
    ASSERT_EQ(net->irecv(recvComm, 1, &data, &size, &tag, &mh, &recv), ncclSuccess);
    ASSERT_TRUE(send && recv);
    int sendDone = 0, recvDone = 0;
    for (auto until = Clock::now() + std::chrono::seconds(10);
         (!sendDone || !recvDone) && Clock::now() < until;) {
      if (!sendDone) {
        ASSERT_EQ(net->test(send, &sendDone, nullptr), ncclSuccess);
      }
      if (!recvDone) {
        ASSERT_EQ(net->test(recv, &recvDone, nullptr), ncclSuccess);
      }
    }
    ASSERT_TRUE(sendDone && recvDone) << "the first message did not cross in 10 s";
    ASSERT_EQ(in, 42);
  }

  // The sender: one message at a time, each with its own bytes, until one does not complete in
  // a moment (the socket is full and UCX holds the rest). From then on it calls nothing.
  std::vector<std::vector<char>> sent;
  void* stuck = nullptr;
  while (static_cast<int>(sent.size()) < kMaxMessages) {
    std::vector<char> bytes(kMessageBytes);
    for (int i = 0; i < kMessageBytes; ++i) bytes[i] = static_cast<char>(sent.size() * 31 + i);
    sent.push_back(std::move(bytes));
    void* request = nullptr;
    ASSERT_EQ(net->isend(sendComm, sent.back().data(), kMessageBytes, 1, mh, &request),
              ncclSuccess);
    ASSERT_NE(request, nullptr);
    if (!completes(net, request, 0.2)) {
      stuck = request;
      break;
    }
  }
  ASSERT_NE(stuck, nullptr) << kMaxMessages << " messages of " << kMessageBytes
                            << " B completed with nobody reading: the socket never filled";
  const int completed = static_cast<int>(sent.size()) - 1;
  ASSERT_GE(completed, 1) << "not even one message completed";

  // The receiver: every message whose send completed, each within 10 s, byte for byte.
  for (int m = 0; m < completed; ++m) {
    std::vector<char> got(kMessageBytes, 0x5a);
    void* data = got.data();
    int size = kMessageBytes;
    int tag = 1;
    void* request = nullptr;
    ASSERT_EQ(net->irecv(recvComm, 1, &data, &size, &tag, &mh, &request), ncclSuccess);
    ASSERT_NE(request, nullptr);
    int received = -1;
    ASSERT_TRUE(completes(net, request, 10, &received))
        << "message " << m << " of " << completed
        << " (its send completed) never arrived: its bytes wait in the sender's endpoint";
    EXPECT_EQ(received, kMessageBytes);
    EXPECT_EQ(got, sent[m]) << "message " << m;
  }
  // The one left in flight, then everything closed.
  {
    std::vector<char> got(kMessageBytes);
    void* data = got.data();
    int size = kMessageBytes;
    int tag = 1;
    void* request = nullptr;
    ASSERT_EQ(net->irecv(recvComm, 1, &data, &size, &tag, &mh, &request), ncclSuccess);
    ASSERT_TRUE(completes(net, request, 10));
    EXPECT_TRUE(completes(net, stuck, 10));
    EXPECT_EQ(got, sent.back());
  }
  EXPECT_EQ(net->closeSend(sendComm), ncclSuccess);
  EXPECT_EQ(net->closeRecv(recvComm), ncclSuccess);
  EXPECT_EQ(net->closeListen(listenComm), ncclSuccess);
}

}  // namespace
