// listen, connect and accept: how two comms find each other before UCX takes over. The handle
// (through NCCL's or Braid's bootstrap) carries a TCP address of the listening host and a random
// id; the connector sends the id and its worker's address over that socket, the acceptor checks
// the id and answers with its own worker's address, and each side makes an endpoint to the
// other's worker. connect() and accept() never wait for the peer: each call takes the next step
// that is ready and otherwise returns a NULL comm, to be called again.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "transports/net/ucx/ucx_comm.h"
#include "transports/net/ucx/ucx_context.h"
#include "transports/net/ucx/ucx_net.h"

namespace braid::ucxnet {
namespace {

constexpr uint32_t kHandleMagic = 0x55435831;  // "UCX1"
// Each step of the exchange once the peer's bytes have started to arrive (a few hundred bytes,
// at most some kilobytes of worker address: they follow at once unless the peer died).
constexpr double kHandshakeS = 10;
constexpr uint32_t kMaxWorkerAddress = 1 << 20;

struct Handle {
  uint32_t magic;
  uint32_t addrLen;
  unsigned char addr[sizeof(sockaddr_in6)];
  uint64_t id;         // which listen this is; also in every message's tag
  void* connectState;  // connect()'s progress, kept in the caller's copy of the handle
};
static_assert(sizeof(Handle) <= NCCL_NET_HANDLE_MAXSIZE);

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

uint64_t randomId() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

}  // namespace

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
  h.id = randomId();
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

ncclResult_t closeListen(void* listenComm) {
  auto* l = static_cast<Listen*>(listenComm);
  if (l->acceptFd >= 0) close(l->acceptFd);
  close(l->fd);
  delete l;
  return ncclSuccess;
}

}  // namespace braid::ucxnet
