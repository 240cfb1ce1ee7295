// Two ends of one plugin connection inside one process, and messages across it: what every
// test of a plugin's data path needs. The connecting side and the accepting side are each polled
// by their own thread (as two ranks would), every loop under a deadline so that a plugin that
// never completes fails the test instead of hanging it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "net/net_api.h"

namespace braid::nettest {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kDeadline{10};

struct Pair {
  void* listenComm = nullptr;
  void* sendComm = nullptr;
  void* recvComm = nullptr;
};

/// listen, then connect (its own thread) and accept (this one) until both have a comm; empty on
/// success, else what failed.
inline std::string connectPair(NetApi& net, Pair* p) {
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  if (Result r = net.listen(handle, &p->listenComm); r != ncclSuccess)
    return "listen returned " + std::to_string(r);
  const auto end = Clock::now() + kDeadline;
  std::atomic<Result> connectResult{ncclSuccess};
  std::thread connector([&] {
    char mine[NCCL_NET_HANDLE_MAXSIZE];  // the copy that travelled to the peer
    memcpy(mine, handle, sizeof(mine));
    while (!p->sendComm && Clock::now() < end) {
      if (Result r = net.connect(mine, &p->sendComm); r != ncclSuccess) {
        connectResult = r;
        return;
      }
      std::this_thread::yield();
    }
  });
  Result acceptResult = ncclSuccess;
  while (!p->recvComm && Clock::now() < end) {
    if ((acceptResult = net.accept(p->listenComm, &p->recvComm)) != ncclSuccess) break;
    std::this_thread::yield();
  }
  connector.join();
  if (connectResult != ncclSuccess) return "connect returned " + std::to_string(connectResult);
  if (acceptResult != ncclSuccess) return "accept returned " + std::to_string(acceptResult);
  if (!p->sendComm || !p->recvComm) return "no connection within the deadline";
  return "";
}

// The two ends close at once, each from its own thread, as two ranks would.
inline void closePair(NetApi& net, Pair* p) {
  std::thread sender([&] {
    if (p->sendComm) net.closeSend(p->sendComm);
  });
  if (p->recvComm) net.closeRecv(p->recvComm);
  sender.join();
  if (p->listenComm) net.closeListen(p->listenComm);
  *p = Pair{};
}

/// One message: `sent` bytes with `tag`, received into a buffer of `posted` bytes.
struct Message {
  size_t sent = 0;
  size_t posted = 0;
  int tag = 0;
};

constexpr unsigned char kPoison = 0xA5;

inline unsigned char patternByte(size_t i, size_t seed) {
  return static_cast<unsigned char>((i * 131 + i / 4093 + seed * 17 + 1) & 0xff);
}

/// Posts every send (its own thread, in order) and every receive (this thread, in `recvOrder`,
/// indices into `msgs`) at once, then tests them all to completion. The received bytes must be
/// the pattern up to the size sent and the poison after it; both sides must report the size
/// sent. Empty on success, else the first difference.
inline std::string exchange(NetApi& net, const Pair& p, const std::vector<Message>& msgs,
                            const std::vector<size_t>& recvOrder) {
  const size_t n = msgs.size();
  std::vector<std::vector<unsigned char>> out(n), in(n);
  std::vector<void*> outMr(n), inMr(n);
  for (size_t i = 0; i < n; i++) {
    out[i].resize(msgs[i].sent + 1);  // never empty: a size-0 message still has an address
    for (size_t b = 0; b < msgs[i].sent; b++) out[i][b] = patternByte(b, i);
    in[i].assign(msgs[i].posted + 1, kPoison);
    if (net.regMr(p.sendComm, out[i].data(), out[i].size(), NCCL_PTR_HOST, &outMr[i]) !=
            ncclSuccess ||
        net.regMr(p.recvComm, in[i].data(), in[i].size(), NCCL_PTR_HOST, &inMr[i]) != ncclSuccess)
      return "regMr failed";
  }
  const auto end = Clock::now() + kDeadline;
  std::vector<int> sentSizes(n, -1), recvSizes(n, -1);
  std::string sendError, recvError;
  // Posts with a retry while the plugin says "not now", then tests each request until done.
  auto run = [&](bool sending, std::string* error, std::vector<int>* sizes) {
    std::vector<void*> req(n, nullptr);
    for (size_t k = 0; k < n; k++) {
      const size_t i = sending ? k : recvOrder[k];
      while (!req[i] && Clock::now() < end) {
        const Result r = sending ? net.isend(p.sendComm, out[i].data(), msgs[i].sent, msgs[i].tag,
                                             outMr[i], &req[i])
                                 : net.irecv(p.recvComm, in[i].data(), msgs[i].posted, msgs[i].tag,
                                             inMr[i], &req[i]);
        if (r != ncclSuccess) {
          *error = (sending ? "isend " : "irecv ") + std::to_string(i) + " returned " +
                   std::to_string(r);
          return;
        }
      }
    }
    for (size_t left = n; left > 0 && Clock::now() < end;) {
      for (size_t i = 0; i < n; i++) {
        if (!req[i]) continue;
        int done = 0, size = -1;
        if (Result r = net.test(req[i], &done, &size); r != ncclSuccess) {
          *error = "test " + std::to_string(i) + " returned " + std::to_string(r);
          return;
        }
        if (done) req[i] = nullptr, (*sizes)[i] = size, left--;
      }
    }
  };
  std::thread sender([&] { run(true, &sendError, &sentSizes); });
  run(false, &recvError, &recvSizes);
  sender.join();
  for (size_t i = 0; i < n; i++) {
    net.deregMr(p.sendComm, outMr[i]);
    net.deregMr(p.recvComm, inMr[i]);
  }
  if (!sendError.empty() || !recvError.empty()) return sendError + " " + recvError;
  for (size_t i = 0; i < n; i++) {
    const std::string which = "message " + std::to_string(i) + " (" + std::to_string(msgs[i].sent) +
                              " B, tag " + std::to_string(msgs[i].tag) + ")";
    if (sentSizes[i] != static_cast<int>(msgs[i].sent))
      return which + ": send reported " + std::to_string(sentSizes[i]);
    if (recvSizes[i] != static_cast<int>(msgs[i].sent))
      return which + ": receive reported " + std::to_string(recvSizes[i]);
    for (size_t b = 0; b < in[i].size(); b++) {
      const unsigned char want = b < msgs[i].sent ? patternByte(b, i) : kPoison;
      if (in[i][b] != want)
        return which + ": byte " + std::to_string(b) + " is " + std::to_string(in[i][b]) +
               ", not " + std::to_string(want);
    }
  }
  return "";
}

}  // namespace braid::nettest
