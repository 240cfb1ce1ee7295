#include "transports/net/ucx/ucx_net.h"

#include <ucp/api/ucp.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "transports/net/ucx/ucx_socket.h"

namespace braid::ucxnet {
namespace {

constexpr uint32_t kHandleMagic = 0x55435831;  // "UCX1"
constexpr double kHandshakeS = 10;             // each blocking step of the rendezvous
constexpr uint32_t kMaxWorkerAddress = 1 << 20;

struct Global {
  std::mutex mutex;
  int refs = 0;
  ucp_context_h context = nullptr;
  ncclDebugLogger_t logger = nullptr;
  Endpoint endpoint;  // the interface listen() uses
  int speedMbps = 10000;
};
Global& global() {
  static Global g;
  return g;
}

#define UCX_LOG(level, ...)                                                                    \
  do {                                                                                         \
    if (global().logger)                                                                       \
      global().logger(level, NCCL_LOG_SUBSYS_NET, __FILE__, __LINE__, "NET/UCX " __VA_ARGS__); \
  } while (0)
#define UCX_WARN(...) UCX_LOG(NCCL_LOG_WARN, __VA_ARGS__)
#define UCX_INFO(...) UCX_LOG(NCCL_LOG_INFO, __VA_ARGS__)

// What travels between the ranks (through NCCL's or Braid's bootstrap): where to meet.
struct Handle {
  uint32_t magic;
  uint32_t addrLen;
  unsigned char addr[sizeof(sockaddr_in6)];
  uint64_t id;         // which listen this is; also the upper bits of every message's tag
  void* connectState;  // connect()'s progress, kept in the caller's copy of the handle
};
static_assert(sizeof(Handle) <= NCCL_NET_HANDLE_MAXSIZE);

struct Request;
struct Comm {
  bool sending = false;
  uint64_t id = 0;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  std::atomic<bool> failed{false};
  ucs_status_t failure = UCS_OK;
  std::string peer;  // the peer's rendezvous address, for messages
  std::unordered_set<Request*> requests;
};

struct Request {
  Comm* comm;
  void* ucp = nullptr;
  bool done = false;
  ucs_status_t status = UCS_OK;
  size_t size = 0;
};

struct Listen {
  int fd = -1;
  uint64_t id = 0;
  int acceptFd = -1;  // a connection being accepted
};

struct ConnectState {
  int fd = -1;
  bool helloSent = false;
  Comm* comm = nullptr;
};

struct Mr {
  void* data;
  size_t size;
};

void onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* c = static_cast<Comm*>(arg);
  c->failure = status;
  c->failed.store(true);
}

void onSent(void*, ucs_status_t status, void* user) {
  auto* r = static_cast<Request*>(user);
  r->status = status;
  r->done = true;
}

void onReceived(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* r = static_cast<Request*>(user);
  r->status = status;
  r->size = info ? info->length : 0;
  r->done = true;
}

uint64_t tagOf(const Comm* c, int tag) {
  return (c->id << 24) ^ static_cast<uint32_t>(tag);
}

ncclResult_t newWorker(Comm* c, std::vector<char>* address) {
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  if (ucs_status_t s = ucp_worker_create(global().context, &wp, &c->worker); s != UCS_OK) {
    UCX_WARN("ucp_worker_create: %s", ucs_status_string(s));
    return ncclSystemError;
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucs_status_t s = ucp_worker_get_address(c->worker, &addr, &len); s != UCS_OK) {
    UCX_WARN("ucp_worker_get_address: %s", ucs_status_string(s));
    return ncclSystemError;
  }
  address->assign(reinterpret_cast<char*>(addr), reinterpret_cast<char*>(addr) + len);
  ucp_worker_release_address(c->worker, addr);
  return ncclSuccess;
}

ncclResult_t newEndpoint(Comm* c, const std::vector<char>& remote) {
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(remote.data());
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = onEndpointError;
  ep.err_handler.arg = c;
  if (ucs_status_t s = ucp_ep_create(c->worker, &ep, &c->ep); s != UCS_OK) {
    UCX_WARN("ucp_ep_create to %s: %s", c->peer.c_str(), ucs_status_string(s));
    return ncclSystemError;
  }
  return ncclSuccess;
}

// Ends a communicator. Pending receives are cancelled and the worker progressed until their
// callbacks ran (a request's memory is ours until then); the endpoint is closed, flushed for a
// sender whose peer looks alive (a healthy peer answers in microseconds: the wait is capped at
// kCloseFlushS, so an abort with an unreachable peer stays quick), and the worker destroyed. A
// send still pending (its peer unreachable: a cut link) cannot be cancelled, and closing its
// endpoint under it trips UCX's assertions: then the endpoint and worker are left as they are (a
// leak, on a path that ends the job anyway) rather than taking the process down.
constexpr double kCloseFlushS = 0.2;

void destroy(Comm* c) {
  using Clock = std::chrono::steady_clock;
  for (Request* r : c->requests)
    if (r->ucp && !r->done && !c->sending) ucp_request_cancel(c->worker, r->ucp);
  auto pending = [c] {
    size_t n = 0;
    for (Request* r : c->requests) n += !r->done;
    return n;
  };
  const auto until = Clock::now() + std::chrono::duration<double>(kCloseFlushS);
  while (pending() > 0 && Clock::now() < until) ucp_worker_progress(c->worker);
  if (size_t stuck = pending(); stuck > 0) {
    UCX_INFO("%zu requests with %s never completed: leaving their endpoint and worker open", stuck,
             c->peer.c_str());
    return;
  }
  for (Request* r : c->requests) {
    if (r->ucp) ucp_request_free(r->ucp);
    delete r;
  }
  c->requests.clear();
  if (c->ep) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = (c->sending && !c->failed.load()) ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(c->ep, &p);
    const auto end = Clock::now() + std::chrono::duration<double>(kCloseFlushS);
    while (UCS_PTR_IS_PTR(req) && ucp_request_check_status(req) == UCS_INPROGRESS &&
           Clock::now() < end)
      ucp_worker_progress(c->worker);
    if (UCS_PTR_IS_PTR(req)) {
      if (ucp_request_check_status(req) == UCS_INPROGRESS) {
        UCX_INFO("closing the endpoint to %s did not finish in %.1f s: left open", c->peer.c_str(),
                 kCloseFlushS);
        return;  // destroying the worker under a pending close is not allowed either
      }
      ucp_request_free(req);
    }
  }
  if (c->worker) ucp_worker_destroy(c->worker);
  delete c;
}

int readSpeed(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  int mbps = 0;
  return (in >> mbps) && mbps > 0 ? mbps : 10000;
}

}  // namespace

ncclResult_t init(ncclDebugLogger_t logger) {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (logger) g.logger = logger;
  if (g.refs++ > 0) return ncclSuccess;
  if (!chooseEndpoint(&g.endpoint)) {
    UCX_WARN("no interface matches NCCL_SOCKET_IFNAME=%s",
             getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME") : "");
    g.refs--;
    return ncclSystemError;
  }
  g.speedMbps = readSpeed(g.endpoint.ifname);
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    UCX_WARN("ucp_config_read: %s", ucs_status_string(s));
    g.refs--;
    return ncclSystemError;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  const ucs_status_t s = ucp_init(&params, config, &g.context);
  ucp_config_release(config);
  if (s != UCS_OK) {
    UCX_WARN("ucp_init: %s", ucs_status_string(s));
    g.refs--;
    return ncclSystemError;
  }
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  UCX_INFO("UCX %u.%u.%u, UCX_TLS=%s, rendezvous on %s (%s)", major, minor, release,
           getenv("UCX_TLS") ? getenv("UCX_TLS") : "(UCX's default)", g.endpoint.ifname.c_str(),
           g.endpoint.text().c_str());
  return ncclSuccess;
}

ncclResult_t finalize() {
  Global& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (g.refs > 0 && --g.refs == 0 && g.context) {
    ucp_cleanup(g.context);
    g.context = nullptr;
  }
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}

void properties(ncclNetProperties_v11_t* p) {
  memset(p, 0, sizeof(*p));
  static std::string name;
  name = global().endpoint.ifname.empty() ? "ucx" : global().endpoint.ifname;
  p->name = const_cast<char*>(name.c_str());
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = global().speedMbps;
  p->latency = 0;
  p->maxComms = 1 << 20;
  p->maxRecvs = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = 0;
  p->maxP2pBytes = p->maxCollBytes = size_t(1) << 40;
  p->maxMultiRequestSize = 1;
}

ncclResult_t listen(int, void* handle, void** listenComm) {
  Endpoint ep = global().endpoint;
  const int fd = listenOn(&ep);
  if (fd < 0) {
    UCX_WARN("listen on %s: %s", ep.text().c_str(), strerror(errno));
    return ncclSystemError;
  }
  Handle h{};
  h.magic = kHandleMagic;
  h.addrLen = ep.len;
  memcpy(h.addr, &ep.addr, ep.len);
  std::random_device rd;
  h.id = ((uint64_t(rd()) << 32) ^ rd()) & ((uint64_t(1) << 40) - 1);
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof(h));
  *listenComm = new Listen{fd, h.id, -1};
  return ncclSuccess;
}

ncclResult_t connect(int, void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle h;
  memcpy(&h, handle, sizeof(h));
  if (h.magic != kHandleMagic || h.addrLen > sizeof(h.addr)) {
    UCX_WARN("connect: not a UCX handle");
    return ncclInternalError;
  }
  Endpoint to;
  to.len = h.addrLen;
  memcpy(&to.addr, h.addr, h.addrLen);
  auto* st = static_cast<ConnectState*>(h.connectState);
  auto giveUp = [&](const char* what) {
    UCX_WARN("connect to %s: %s (%s)", to.text().c_str(), what, strerror(errno));
    if (st) {
      if (st->fd >= 0) close(st->fd);
      if (st->comm) destroy(st->comm);
      delete st;
    }
    h.connectState = nullptr;
    memcpy(handle, &h, sizeof(h));
    return ncclRemoteError;
  };
  if (!st) {
    st = new ConnectState;
    h.connectState = st;
    memcpy(handle, &h, sizeof(h));
    if ((st->fd = startConnect(to)) < 0) return giveUp("socket");
  }
  if (!st->helloSent) {
    const int state = connectDone(st->fd);
    if (state < 0) return giveUp("refused or unreachable");
    if (state == 0) return ncclSuccess;
    st->comm = new Comm;
    st->comm->sending = true;
    st->comm->id = h.id;
    st->comm->peer = to.text();
    std::vector<char> mine;
    if (newWorker(st->comm, &mine) != ncclSuccess) return giveUp("worker");
    std::vector<char> hello(sizeof(h.id));
    memcpy(hello.data(), &h.id, sizeof(h.id));
    hello.insert(hello.end(), mine.begin(), mine.end());
    if (!sendMessage(st->fd, hello.data(), static_cast<uint32_t>(hello.size()), kHandshakeS))
      return giveUp("sending the worker address");
    st->helloSent = true;
  }
  if (!readable(st->fd)) return ncclSuccess;  // the acceptor has not answered yet
  std::vector<char> theirs;
  if (!recvMessage(st->fd, &theirs, kMaxWorkerAddress, kHandshakeS))
    return giveUp("receiving the peer's worker address");
  if (newEndpoint(st->comm, theirs) != ncclSuccess) return giveUp("endpoint");
  close(st->fd);
  *sendComm = st->comm;
  delete st;
  h.connectState = nullptr;
  memcpy(handle, &h, sizeof(h));
  return ncclSuccess;
}

ncclResult_t accept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  auto* l = static_cast<Listen*>(listenComm);
  if (l->acceptFd < 0) {
    l->acceptFd = accept4(l->fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (l->acceptFd < 0) return ncclSuccess;  // nobody yet (the socket is non-blocking)
  }
  if (!readable(l->acceptFd)) return ncclSuccess;
  std::vector<char> hello;
  uint64_t id = 0;
  const bool ok = recvMessage(l->acceptFd, &hello, kMaxWorkerAddress, kHandshakeS) &&
                  hello.size() > sizeof(id) && (memcpy(&id, hello.data(), sizeof(id)), true) &&
                  id == l->id;
  if (!ok) {
    // A stranger, or a connector that went away: drop it and keep listening.
    UCX_WARN("accept: dropped a connection that did not say this listen's id");
    close(l->acceptFd);
    l->acceptFd = -1;
    return ncclSuccess;
  }
  auto* c = new Comm;
  c->id = l->id;
  sockaddr_storage from{};
  socklen_t fromLen = sizeof(from);
  Endpoint peer;
  if (getpeername(l->acceptFd, reinterpret_cast<sockaddr*>(&from), &fromLen) == 0) {
    peer.addr = from;
    peer.len = fromLen;
  }
  c->peer = peer.text();
  std::vector<char> mine;
  const std::vector<char> theirs(hello.begin() + sizeof(id), hello.end());
  if (newWorker(c, &mine) != ncclSuccess || newEndpoint(c, theirs) != ncclSuccess ||
      !sendMessage(l->acceptFd, mine.data(), static_cast<uint32_t>(mine.size()), kHandshakeS)) {
    UCX_WARN("accept from %s failed", c->peer.c_str());
    close(l->acceptFd);
    l->acceptFd = -1;
    destroy(c);
    return ncclRemoteError;
  }
  close(l->acceptFd);
  l->acceptFd = -1;
  *recvComm = c;
  return ncclSuccess;
}

ncclResult_t regMr(void*, void* data, size_t size, int type, void** mhandle) {
  if (type != NCCL_PTR_HOST) {
    UCX_WARN("regMr: memory type %d: this plugin moves host memory only", type);
    return ncclInternalError;
  }
  // UCX registers what it sends on its own (a registration cache); the handle only vouches.
  *mhandle = new Mr{data, size};
  return ncclSuccess;
}

ncclResult_t deregMr(void*, void* mhandle) {
  delete static_cast<Mr*>(mhandle);
  return ncclSuccess;
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void** request) {
  auto* c = static_cast<Comm*>(sendComm);
  *request = nullptr;
  if (c->failed.load()) {
    UCX_WARN("send to %s: %s", c->peer.c_str(), ucs_status_string(c->failure));
    return ncclRemoteError;
  }
  auto* r = new Request{c};
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.send = onSent;
  p.user_data = r;
  void* s = ucp_tag_send_nbx(c->ep, data, size, tagOf(c, tag), &p);
  if (UCS_PTR_IS_ERR(s)) {
    UCX_WARN("send to %s: %s", c->peer.c_str(), ucs_status_string(UCS_PTR_STATUS(s)));
    delete r;
    return ncclRemoteError;
  }
  r->ucp = s;
  r->size = size;
  if (!s) r->done = true;
  c->requests.insert(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags,
                   void** request) {
  auto* c = static_cast<Comm*>(recvComm);
  *request = nullptr;
  if (n != 1) {
    UCX_WARN("irecv: %d grouped receives; this plugin takes one (maxRecvs 1)", n);
    return ncclInternalError;
  }
  if (c->failed.load()) {
    UCX_WARN("receive from %s: %s", c->peer.c_str(), ucs_status_string(c->failure));
    return ncclRemoteError;
  }
  auto* r = new Request{c};
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  p.cb.recv = onReceived;
  p.user_data = r;
  void* s = ucp_tag_recv_nbx(c->worker, data[0], sizes[0], tagOf(c, tags[0]), ~uint64_t(0), &p);
  if (UCS_PTR_IS_ERR(s)) {
    UCX_WARN("receive from %s: %s", c->peer.c_str(), ucs_status_string(UCS_PTR_STATUS(s)));
    delete r;
    return ncclRemoteError;
  }
  r->ucp = s;
  c->requests.insert(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  Comm* c = r->comm;
  *done = 0;
  if (!r->done) ucp_worker_progress(c->worker);
  if (!r->done) {
    if (c->failed.load()) {
      UCX_WARN("%s %s: %s", c->sending ? "send to" : "receive from", c->peer.c_str(),
               ucs_status_string(c->failure));
      return ncclRemoteError;
    }
    return ncclSuccess;
  }
  const ucs_status_t status = r->status;
  const size_t size = r->size;
  if (r->ucp) ucp_request_free(r->ucp);
  c->requests.erase(r);
  delete r;
  if (status != UCS_OK) {
    UCX_WARN("%s %s: %s", c->sending ? "send to" : "receive from", c->peer.c_str(),
             ucs_status_string(status));
    return ncclRemoteError;
  }
  *done = 1;
  if (sizes) *sizes = static_cast<int>(size);
  return ncclSuccess;
}

ncclResult_t closeSend(void* sendComm) {
  destroy(static_cast<Comm*>(sendComm));
  return ncclSuccess;
}

ncclResult_t closeRecv(void* recvComm) {
  destroy(static_cast<Comm*>(recvComm));
  return ncclSuccess;
}

ncclResult_t closeListen(void* listenComm) {
  auto* l = static_cast<Listen*>(listenComm);
  if (l->acceptFd >= 0) close(l->acceptFd);
  close(l->fd);
  delete l;
  return ncclSuccess;
}

}  // namespace braid::ucxnet
