#include "tuner/calibration.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/reduce.h"

namespace braid {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Best of a few runs: the quietest one is the host's speed, the others saw its neighbours.
template <typename F>
double bestSeconds(int runs, F&& f) {
  double best = 1e30;
  for (int i = 0; i < runs; i++) {
    auto t = Clock::now();
    f();
    best = std::min(best, secondsSince(t));
  }
  return best;
}

// The algorithms' per-step cost over the raw primitive's, and their bandwidth over the raw
// copy's or stream's, as fitted on the reference machine (docs/performance.md, "Tuner"): a step
// posts a slot descriptor, waits on a flag and checks the operation fingerprint, and over TCP
// also passes two proxy threads; data is copied into a slot and out of it again.
constexpr double kShmGbpsPerCopyGbps = 0.24;
constexpr double kLocalGbpsPerCopyGbps = 0.28;
constexpr double kTcpStepPerOneWay = 8.0;
constexpr double kTcpGbpsPerStreamGbps = 0.5;

void measureKernels(CalibrationFigures* f) {
  constexpr size_t kFloats = 1 << 20;  // 4 MiB per buffer: beyond L2, like a large message
  std::vector<float> a(kFloats, 1.0f), b(kFloats, 2.0f), out(kFloats);
  kernels::ReduceOp sum;  // float sum
  const double bytes = kFloats * sizeof(float);
  // Best of many: a 4 MiB pass is a fraction of a millisecond, and on a shared host single
  // passes vary severalfold as the neighbours come and go.
  constexpr int kRuns = 24;
  f->copyGbps = bytes /
                bestSeconds(kRuns, [&] { kernels::copy(out.data(), nullptr, a.data(), bytes); }) /
                1e9;
  f->reduceGbps =
      bytes /
      bestSeconds(
          kRuns,
          [&] { kernels::reduce(sum, out.data(), nullptr, a.data(), b.data(), kFloats, 0); }) /
      1e9;
}

void measureThreadPingPong(CalibrationFigures* f) {
  constexpr int kRounds = 300, kBatches = 15;
  // A budget as well as a count: where every core is busy each round trip waits for a time
  // slice (measured beside two spinning processes on 2 cores: 2-3 ms a round, 10-13 s for all
  // the rounds, at the first init on the host), and the figure is only logged
  // (linkCostsFromFigures). A batch cut short does not count; with none whole the figure stays
  // unmeasured (0).
  constexpr double kBudgetS = 0.1;
  alignas(64) std::atomic<int> ping{0};
  alignas(64) std::atomic<int> pong{0};
  // Spin a little, then yield: on a loaded host the peer may need this core to answer. A
  // negative ping ends the peer.
  auto waitFor = [](std::atomic<int>& flag, int value) {
    int seen;
    for (int spins = 0; (seen = flag.load(std::memory_order_acquire)) != value && seen >= 0;
         spins++)
      if (spins > 200) sched_yield();
    return seen >= 0;
  };
  std::thread peer([&] {
    for (int i = 1; waitFor(ping, i); i++) pong.store(i, std::memory_order_release);
  });
  const auto start = Clock::now();
  double best = 1e30;
  int round = 0;
  for (int batch = 0; batch < kBatches && secondsSince(start) < kBudgetS; batch++) {
    auto t = Clock::now();
    bool whole = true;
    for (int i = 0; i < kRounds && whole; i++) {
      ping.store(++round, std::memory_order_release);
      waitFor(pong, round);
      whole = (i & 15) != 15 || secondsSince(start) < kBudgetS;
    }
    if (whole) best = std::min(best, secondsSince(t));
  }
  ping.store(-1, std::memory_order_release);
  peer.join();
  if (best < 1e30) f->threadOneWayUs = best / kRounds / 2 * 1e6;
}

// A connected TCP loopback pair; false (fds closed) if the host has no loopback.
bool loopbackPair(int* a, int* b) {
  *a = *b = -1;
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bool ok = listener >= 0 && bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
            listen(listener, 1) == 0 &&
            getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (ok) {
    *a = socket(AF_INET, SOCK_STREAM, 0);
    ok = *a >= 0 && connect(*a, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  if (ok) ok = (*b = accept(listener, nullptr, nullptr)) >= 0;
  if (listener >= 0) close(listener);
  int one = 1;
  for (int fd : {*a, *b})
    if (ok) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (!ok) {
    if (*a >= 0) close(*a);
    if (*b >= 0) close(*b);
  }
  return ok;
}

bool sendAllBytes(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool recvAllBytes(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = recv(fd, p, n, 0);
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

// Pins the calling thread to the `index`-th CPU this process may use, if it may use two or more
// (the calibration's own threads only, never the caller's).
void pinToAllowedCpu(int index) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) < 2) return;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed) || seen++ != index) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    return;
  }
}

void measureTcpPinned(CalibrationFigures* f) {
  int a, b;
  if (!loopbackPair(&a, &b)) return;
  constexpr int kRounds = 25, kBatches = 16;
  constexpr size_t kStreamBytes = 4 << 20, kChunk = 256 << 10;
  constexpr int kStreams = 8;
  std::thread peer([b] {
    pinToAllowedCpu(1);
    char byte = 0;
    for (int i = 0; i < kRounds * kBatches; i++)
      if (!recvAllBytes(b, &byte, 1) || !sendAllBytes(b, &byte, 1)) return;
    std::vector<char> sink(kChunk);
    for (int stream = 0; stream < kStreams; stream++) {
      for (size_t got = 0; got < kStreamBytes; got += kChunk)
        if (!recvAllBytes(b, sink.data(), kChunk)) return;
      if (!sendAllBytes(b, &byte, 1)) return;
    }
  });
  char byte = 1;
  bool ok = true;
  double best = 1e30;
  for (int batch = 0; ok && batch < kBatches; batch++) {
    auto t = Clock::now();
    for (int i = 0; ok && i < kRounds; i++)
      ok = sendAllBytes(a, &byte, 1) && recvAllBytes(a, &byte, 1);
    best = std::min(best, secondsSince(t));
  }
  if (ok) f->tcpOneWayUs = best / kRounds / 2 * 1e6;
  std::vector<char> chunk(kChunk, 7);
  best = 1e30;
  for (int stream = 0; ok && stream < kStreams; stream++) {
    auto t = Clock::now();
    for (size_t sent = 0; ok && sent < kStreamBytes; sent += kChunk)
      ok = sendAllBytes(a, chunk.data(), kChunk);
    ok = ok && recvAllBytes(a, &byte, 1);
    best = std::min(best, secondsSince(t));
  }
  if (ok) f->tcpGbps = kStreamBytes / best / 1e9;
  shutdown(a, SHUT_RDWR);
  peer.join();
  close(a);
  close(b);
}

// Both ends run on threads of their own, pinned to two different CPUs where there are two:
// unpinned, the ping-pong is bimodal (one core when the scheduler puts both threads there, two
// otherwise), and so is every constant derived from it.
void measureTcp(CalibrationFigures* f) {
  std::thread measurer([f] {
    pinToAllowedCpu(0);
    measureTcpPinned(f);
  });
  measurer.join();
}

}  // namespace

CalibrationFigures measureHost() {
  CalibrationFigures f;
  measureKernels(&f);
  measureThreadPingPong(&f);
  measureTcp(&f);
  return f;
}

LinkCosts linkCostsFromFigures(const CalibrationFigures& f) {
  LinkCosts c = defaultLinkCosts();
  if (f.reduceGbps > 0) c.local.reduceGbps = c.shm.reduceGbps = c.tcp.reduceGbps = f.reduceGbps;
  if (f.copyGbps > 0) {
    c.local.gbps = kLocalGbpsPerCopyGbps * f.copyGbps;
    c.shm.gbps = kShmGbpsPerCopyGbps * f.copyGbps;
  }
  // The thread ping-pong is logged, not used: on a host with more ranks than cores it is
  // bimodal (a cache line's transfer when the two threads have cores of their own, a context
  // switch when they share one), and a shared-memory step costs mostly its software path, which
  // the built-in alpha already measures.
  if (f.tcpOneWayUs > 0) c.tcp.alphaUs = kTcpStepPerOneWay * f.tcpOneWayUs;
  if (f.tcpGbps > 0) c.tcp.gbps = kTcpGbpsPerStreamGbps * f.tcpGbps;
  return c;
}

}  // namespace braid
