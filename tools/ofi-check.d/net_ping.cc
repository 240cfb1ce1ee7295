// net_ping: one side of a ping-pong between two processes over an NCCL net plugin
// (tools/ofi-check). It dlopens the plugin, takes the newest ncclNetPlugin_vN it exports among
// v11..v8 and drives it the way NCCL's proxy does: listen/connect/accept polled until both sides
// are up, host buffers registered with regMr(NCCL_PTR_HOST), isend/irecv retried while they return
// no request, test() polled to completion, everything under a deadline.
//
//   net_ping PLUGIN listen  HANDLEFILE   # side A: writes its handle (hex) to HANDLEFILE, then
//                                        # reads side B's from HANDLEFILE.back
//   net_ping PLUGIN connect HANDLEFILE   # side B: reads HANDLEFILE, writes HANDLEFILE.back
//
// Each side listens and connects to the other, so there is a send and a receive communicator both
// ways. Side B sends messages of 8 B, 64 KiB and 4 MiB; side A checks the contents and answers
// with a different pattern, which side B checks. Per size: one line "size S iters N ok
// half-rtt-us X MB/s Y".
//
// Environment: NET_PING_DEV (device index, default 0), NET_PING_TIMEOUT (seconds, default 60),
// NET_PING_ITERS (iterations of the 8 B size, default 200; larger sizes do fewer),
// NET_PING_LOG (plugin log level shown: 0 none .. 5 trace, default 2 warnings), NET_PING_VERSION
// (8..11: drive that interface version instead of the newest).
// Exit status: 0 all sizes exchanged and verified; 1 a plugin call failed, timed out or data was
// wrong; 2 bad usage or the plugin could not be loaded.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "transports/net/net_plugin_api.h"

namespace {

using Clock = std::chrono::steady_clock;

int g_log_level = NCCL_LOG_WARN;
Clock::time_point g_deadline;
const char* g_side = "?";

void logger(ncclDebugLogLevel level, unsigned long, const char* file, int line, const char* fmt,
            ...) {
  if (level == NCCL_LOG_NONE || static_cast<int>(level) > g_log_level) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  fprintf(stderr, "net_ping %s: plugin [%d] %s:%d %s\n", g_side, static_cast<int>(level),
          file ? file : "", line, buf);
}

[[noreturn]] void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "net_ping %s: FAIL: ", g_side);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stdout);
  _exit(1);
}

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail("%s returned %d", what, static_cast<int>(r));
}

void check_deadline(const char* what) {
  if (Clock::now() > g_deadline) fail("timed out in %s", what);
}

long env_long(const char* name, long def) {
  const char* v = getenv(name);
  return v && *v ? strtol(v, nullptr, 10) : def;
}

// The newest interface the plugin exports, behind one set of calls.
struct Net {
  int version = 0;
  const char* name = "";
  ncclNet_v8_t* v8 = nullptr;
  ncclNet_v9_t* v9 = nullptr;
  ncclNet_v10_t* v10 = nullptr;
  ncclNet_v11_t* v11 = nullptr;
  void* ctx = nullptr;

  void init() {
    if (v11) {
      ncclNetCommConfig_v11_t config = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
      check(v11->init(&ctx, 0x5eed0f1c0ffeeULL, &config, logger, nullptr), "init");
    } else if (v10) {
      check(v10->init(logger, nullptr), "init");
    } else if (v9) {
      check(v9->init(logger), "init");
    } else {
      check(v8->init(logger), "init");
    }
  }
  int devices() {
    int n = 0;
    check(v11   ? v11->devices(&n)
          : v10 ? v10->devices(&n)
          : v9  ? v9->devices(&n)
                : v8->devices(&n),
          "devices");
    return n;
  }
  ncclNetProperties_v11_t properties(int dev) {
    ncclNetProperties_v11_t p;
    memset(&p, 0, sizeof(p));
    if (v11) {
      check(v11->getProperties(dev, &p), "getProperties");
    } else if (v10 || v9) {
      ncclNetProperties_v9_t q;
      memset(&q, 0, sizeof(q));
      check(v10 ? v10->getProperties(dev, &q) : v9->getProperties(dev, &q), "getProperties");
      memcpy(&p, &q, sizeof(q));
    } else {
      ncclNetProperties_v8_t q;
      memset(&q, 0, sizeof(q));
      check(v8->getProperties(dev, &q), "getProperties");
      p.name = q.name;
      p.pciPath = q.pciPath;
      p.guid = q.guid;
      p.ptrSupport = q.ptrSupport;
      p.regIsGlobal = q.regIsGlobal;
      p.speed = q.speed;
      p.port = q.port;
      p.latency = q.latency;
      p.maxComms = q.maxComms;
      p.maxRecvs = q.maxRecvs;
    }
    return p;
  }
  void print_properties(int dev) {
    ncclNetProperties_v11_t p = properties(dev);
    printf(
        "device %d: name %s pci %s ptrSupport 0x%x (%s%s%s) regIsGlobal %d speed %d maxComms %d "
        "maxRecvs %d\n",
        dev, p.name ? p.name : "(null)", p.pciPath ? p.pciPath : "(null)", p.ptrSupport,
        (p.ptrSupport & NCCL_PTR_HOST) ? "HOST " : "",
        (p.ptrSupport & NCCL_PTR_CUDA) ? "CUDA " : "",
        (p.ptrSupport & NCCL_PTR_DMABUF) ? "DMABUF" : "", p.regIsGlobal, p.speed, p.maxComms,
        p.maxRecvs);
    if (!(p.ptrSupport & NCCL_PTR_HOST)) fail("device %d does not support host memory", dev);
  }
  void listen(int dev, void* handle, void** comm) {
    check(v11   ? v11->listen(ctx, dev, handle, comm)
          : v10 ? v10->listen(dev, handle, comm)
          : v9  ? v9->listen(dev, handle, comm)
                : v8->listen(dev, handle, comm),
          "listen");
  }
  void connect(int dev, void* handle, void** comm) {
    ncclNetDeviceHandle_v8_t* dh = nullptr;
    ncclNetCommConfig_v10_t config = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
    check(v11   ? v11->connect(ctx, dev, handle, comm, &dh)
          : v10 ? v10->connect(dev, &config, handle, comm, &dh)
          : v9  ? v9->connect(dev, handle, comm, &dh)
                : v8->connect(dev, handle, comm, &dh),
          "connect");
  }
  void accept(void* listen_comm, void** comm) {
    ncclNetDeviceHandle_v8_t* dh = nullptr;
    check(v11   ? v11->accept(listen_comm, comm, &dh)
          : v10 ? v10->accept(listen_comm, comm, &dh)
          : v9  ? v9->accept(listen_comm, comm, &dh)
                : v8->accept(listen_comm, comm, &dh),
          "accept");
  }
  void* reg(void* comm, void* data, size_t size) {
    void* mh = nullptr;
    check(v11   ? v11->regMr(comm, data, size, NCCL_PTR_HOST, &mh)
          : v10 ? v10->regMr(comm, data, size, NCCL_PTR_HOST, &mh)
          : v9  ? v9->regMr(comm, data, size, NCCL_PTR_HOST, &mh)
                : v8->regMr(comm, data, size, NCCL_PTR_HOST, &mh),
          "regMr(NCCL_PTR_HOST)");
    return mh;
  }
  void dereg(void* comm, void* mh) {
    check(v11   ? v11->deregMr(comm, mh)
          : v10 ? v10->deregMr(comm, mh)
          : v9  ? v9->deregMr(comm, mh)
                : v8->deregMr(comm, mh),
          "deregMr");
  }
  void* isend(void* comm, void* data, size_t size, int tag, void* mh) {
    void* req = nullptr;
    check(v11   ? v11->isend(comm, data, size, tag, mh, nullptr, &req)
          : v10 ? v10->isend(comm, data, size, tag, mh, nullptr, &req)
          : v9  ? v9->isend(comm, data, size, tag, mh, &req)
                : v8->isend(comm, data, static_cast<int>(size), tag, mh, &req),
          "isend");
    return req;
  }
  void* irecv(void* comm, void* data, size_t size, int tag, void* mh) {
    void* req = nullptr;
    size_t sizes[1] = {size};
    int isizes[1] = {static_cast<int>(size)};
    int tags[1] = {tag};
    void* datas[1] = {data};
    void* mhs[1] = {mh};
    void* phs[1] = {nullptr};
    check(v11   ? v11->irecv(comm, 1, datas, sizes, tags, mhs, phs, &req)
          : v10 ? v10->irecv(comm, 1, datas, sizes, tags, mhs, phs, &req)
          : v9  ? v9->irecv(comm, 1, datas, sizes, tags, mhs, &req)
                : v8->irecv(comm, 1, datas, isizes, tags, mhs, &req),
          "irecv");
    return req;
  }
  bool test(void* req, int* size) {
    int done = 0;
    check(v11   ? v11->test(req, &done, size)
          : v10 ? v10->test(req, &done, size)
          : v9  ? v9->test(req, &done, size)
                : v8->test(req, &done, size),
          "test");
    return done != 0;
  }
  void close_send(void* c) {
    check(v11   ? v11->closeSend(c)
          : v10 ? v10->closeSend(c)
          : v9  ? v9->closeSend(c)
                : v8->closeSend(c),
          "closeSend");
  }
  void close_recv(void* c) {
    check(v11   ? v11->closeRecv(c)
          : v10 ? v10->closeRecv(c)
          : v9  ? v9->closeRecv(c)
                : v8->closeRecv(c),
          "closeRecv");
  }
  void close_listen(void* c) {
    check(v11   ? v11->closeListen(c)
          : v10 ? v10->closeListen(c)
          : v9  ? v9->closeListen(c)
                : v8->closeListen(c),
          "closeListen");
  }
  void finalize() {
    if (v11 && v11->finalize) check(v11->finalize(ctx), "finalize");
  }
};

std::string to_hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

void write_handle(const std::string& path, const unsigned char* handle) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << to_hex(handle, NCCL_NET_HANDLE_MAXSIZE) << "\n";
    if (!f) fail("cannot write %s", tmp.c_str());
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename %s", tmp.c_str());
}

void read_handle(const std::string& path, unsigned char* handle) {
  std::string hex;
  for (;;) {
    std::ifstream f(path);
    if (f && (f >> hex) && hex.size() == 2 * NCCL_NET_HANDLE_MAXSIZE) break;
    check_deadline(("waiting for handle file " + path).c_str());
    usleep(20000);
  }
  for (size_t i = 0; i < NCCL_NET_HANDLE_MAXSIZE; ++i)
    handle[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
}

// Byte i of message `iter` of size `size` from side `who` (0 B's request, 1 A's answer).
inline unsigned char pattern(size_t i, int iter, size_t size, int who) {
  return static_cast<unsigned char>((i * 131 + static_cast<size_t>(iter) * 7 + size + who * 97) ^
                                    (i >> 8));
}

void fill(std::vector<unsigned char>& buf, size_t size, int iter, int who) {
  for (size_t i = 0; i < size; ++i) buf[i] = pattern(i, iter, size, who);
}

void verify(const std::vector<unsigned char>& buf, size_t size, int iter, int who) {
  for (size_t i = 0; i < size; ++i)
    if (buf[i] != pattern(i, iter, size, who))
      fail("size %zu iteration %d: byte %zu is 0x%02x, expected 0x%02x", size, iter, i, buf[i],
           pattern(i, iter, size, who));
}

void* post_send(Net& net, void* comm, void* data, size_t size, void* mh, const char* what) {
  for (;;) {
    void* req = net.isend(comm, data, size, 0, mh);
    if (req) return req;
    check_deadline(what);
  }
}

void* post_recv(Net& net, void* comm, void* data, size_t size, void* mh, const char* what) {
  for (;;) {
    void* req = net.irecv(comm, data, size, 0, mh);
    if (req) return req;
    check_deadline(what);
  }
}

int wait(Net& net, void* req, const char* what) {
  int size = -1;
  while (!net.test(req, &size)) check_deadline(what);
  return size;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || (strcmp(argv[2], "listen") != 0 && strcmp(argv[2], "connect") != 0)) {
    fprintf(stderr, "usage: %s PLUGIN listen|connect HANDLEFILE\n", argv[0]);
    return 2;
  }
  const bool side_a = strcmp(argv[2], "listen") == 0;
  g_side = side_a ? "A" : "B";
  setvbuf(stdout, nullptr, _IOLBF, 0);
  g_log_level = static_cast<int>(env_long("NET_PING_LOG", NCCL_LOG_WARN));
  const long timeout_s = env_long("NET_PING_TIMEOUT", 60);
  const int dev = static_cast<int>(env_long("NET_PING_DEV", 0));
  const int base_iters = static_cast<int>(env_long("NET_PING_ITERS", 200));
  g_deadline = Clock::now() + std::chrono::seconds(timeout_s);
  const std::string handle_path = argv[3];
  const std::string mine = side_a ? handle_path : handle_path + ".back";
  const std::string theirs = side_a ? handle_path + ".back" : handle_path;

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "net_ping %s: cannot load %s: %s\n", g_side, argv[1], dlerror());
    return 2;
  }
  // The newest of v11..v8, or NET_PING_VERSION's.
  const long want = env_long("NET_PING_VERSION", 0);
  Net net;
  if ((want == 0 || want == 11) &&
      (net.v11 = static_cast<ncclNet_v11_t*>(dlsym(lib, "ncclNetPlugin_v11")))) {
    net.version = 11;
    net.name = net.v11->name;
  } else if ((want == 0 || want == 10) &&
             (net.v10 = static_cast<ncclNet_v10_t*>(dlsym(lib, "ncclNetPlugin_v10")))) {
    net.version = 10;
    net.name = net.v10->name;
  } else if ((want == 0 || want == 9) &&
             (net.v9 = static_cast<ncclNet_v9_t*>(dlsym(lib, "ncclNetPlugin_v9")))) {
    net.version = 9;
    net.name = net.v9->name;
  } else if ((want == 0 || want == 8) &&
             (net.v8 = static_cast<ncclNet_v8_t*>(dlsym(lib, "ncclNetPlugin_v8")))) {
    net.version = 8;
    net.name = net.v8->name;
  } else {
    fprintf(stderr, "net_ping %s: %s exports no %s\n", g_side, argv[1],
            want ? ("ncclNetPlugin_v" + std::to_string(want)).c_str() : "ncclNetPlugin_v11..v8");
    return 2;
  }
  printf("plugin %s: ncclNetPlugin_v%d name %s\n", argv[1], net.version, net.name);

  auto t0 = Clock::now();
  net.init();
  const int ndev = net.devices();
  printf("init ok in %.0f ms, %d device(s)\n",
         std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), ndev);
  if (dev < 0 || dev >= ndev) fail("device %d out of range (%d devices)", dev, ndev);
  printf("devices:");
  for (int d = 0; d < ndev; ++d) {
    ncclNetProperties_v11_t p = net.properties(d);
    printf(" %d=%s", d, p.name ? p.name : "(null)");
  }
  printf("\n");
  net.print_properties(dev);

  // Both ways: listen, publish our handle, connect to the peer's, accept the peer.
  unsigned char my_handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  unsigned char peer_handle[NCCL_NET_HANDLE_MAXSIZE] = {};
  void* listen_comm = nullptr;
  net.listen(dev, my_handle, &listen_comm);
  if (!listen_comm) fail("listen returned no communicator");
  write_handle(mine, my_handle);
  read_handle(theirs, peer_handle);
  void* send_comm = nullptr;
  void* recv_comm = nullptr;
  t0 = Clock::now();
  while (!send_comm || !recv_comm) {
    if (!send_comm) net.connect(dev, peer_handle, &send_comm);
    if (!recv_comm) net.accept(listen_comm, &recv_comm);
    check_deadline(!send_comm ? "connect" : "accept");
  }
  printf("connected both ways in %.0f ms\n",
         std::chrono::duration<double, std::milli>(Clock::now() - t0).count());

  const size_t sizes[] = {8, 64 << 10, 4 << 20};
  const size_t max_size = 4 << 20;
  std::vector<unsigned char> sbuf(max_size), rbuf(max_size);
  void* smh = net.reg(send_comm, sbuf.data(), max_size);
  void* rmh = net.reg(recv_comm, rbuf.data(), max_size);
  for (size_t size : sizes) {
    const int iters = size <= 8            ? base_iters
                      : size <= (64 << 10) ? std::max(base_iters / 4, 1)
                                           : std::max(base_iters / 20, 1);
    // Untimed warm-up exchange (iteration -1), then the timed ones.
    double elapsed = 0;
    for (int it = -1; it < iters; ++it) {
      auto start = Clock::now();
      if (side_a) {
        memset(rbuf.data(), 0, size);
        void* r = post_recv(net, recv_comm, rbuf.data(), size, rmh, "irecv");
        int got = wait(net, r, "receiving a request");
        if (static_cast<size_t>(got) != size) fail("received %d bytes, expected %zu", got, size);
        verify(rbuf, size, it, 0);
        fill(sbuf, size, it, 1);
        void* s = post_send(net, send_comm, sbuf.data(), size, smh, "isend (answer)");
        wait(net, s, "sending the answer");
      } else {
        memset(rbuf.data(), 0, size);
        void* r = post_recv(net, recv_comm, rbuf.data(), size, rmh, "irecv (answer)");
        fill(sbuf, size, it, 0);
        void* s = post_send(net, send_comm, sbuf.data(), size, smh, "isend");
        wait(net, s, "sending a request");
        int got = wait(net, r, "receiving the answer");
        if (static_cast<size_t>(got) != size) fail("received %d bytes, expected %zu", got, size);
        verify(rbuf, size, it, 1);
      }
      if (it >= 0) elapsed += std::chrono::duration<double>(Clock::now() - start).count();
    }
    const double half_rtt_us = elapsed / iters / 2 * 1e6;
    const double mbps = static_cast<double>(size) * 2 * iters / elapsed / 1e6;
    printf("size %zu iters %d ok half-rtt-us %.1f MB/s %.1f\n", size, iters, half_rtt_us, mbps);
  }
  net.dereg(send_comm, smh);
  net.dereg(recv_comm, rmh);
  net.close_send(send_comm);
  net.close_recv(recv_comm);
  net.close_listen(listen_comm);
  net.finalize();
  printf("done: all sizes ok\n");
  return 0;
}
