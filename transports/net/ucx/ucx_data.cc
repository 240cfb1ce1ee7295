// The data path: registrations, tagged sends and receives, test(), closing comms. Every request
// completes through test(), which progresses the comm's worker (so a comm moves only when its
// caller looks at it: NCCL's model); sends and receives are matched by UCX in the order posted
// among those of one tag. Large messages go through UCX's rendezvous, which a receive's
// completion covers like any other; the size reported is the one the sender sent.
#include <ucp/api/ucp.h>

#include "transports/net/ucx/ucx_comm.h"
#include "transports/net/ucx/ucx_context.h"
#include "transports/net/ucx/ucx_flusher.h"
#include "transports/net/ucx/ucx_net.h"

namespace braid::ucxnet {
namespace {

struct Mr {
  void* data;
  size_t size;
};

const char* direction(const Comm* c) {
  return c->sending ? "send to" : "receive from";
}

}  // namespace

ncclResult_t regMr(void*, void* data, size_t size, int type, void** mhandle) {
  *mhandle = nullptr;
  if (type != NCCL_PTR_HOST) {
    UCX_WARN("regMr: memory type %d: this plugin moves host memory only (ptrSupport HOST)", type);
    return ncclInternalError;
  }
  // UCX registers what it moves on its own (its registration cache): the handle only vouches.
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
  std::lock_guard<std::mutex> lock(c->lock);
  if (const std::string gone = peerGone(c, true); !gone.empty()) {
    UCX_WARN("send to %s: %s", c->peer.c_str(), gone.c_str());
    return ncclRemoteError;
  }
  Request* r = takeRequest(c, false);
  if (!r) return ncclSuccess;  // all in flight: "not now"
  const ucp_request_param_t p = requestParams(r);
  void* s = ucp_tag_send_nbx(c->ep, data, size, dataTag(c, tag), &p);
  if (UCS_PTR_IS_ERR(s)) {
    UCX_WARN("send to %s: %s", c->peer.c_str(), ucs_status_string(UCS_PTR_STATUS(s)));
    releaseRequest(r);
    return ncclRemoteError;
  }
  r->ucp = s;
  r->size = size;
  *request = r;
  return ncclSuccess;
}

// One buffer per call (maxRecvs 1). A message shorter than the buffer completes it with its own
// size; a longer one is an error (UCS_ERR_MESSAGE_TRUNCATED), as NCCL's networks report it.
ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags,
                   void** request) {
  auto* c = static_cast<Comm*>(recvComm);
  *request = nullptr;
  if (n != 1) {
    UCX_WARN("irecv: %d grouped receives; this plugin takes one (maxRecvs 1)", n);
    return ncclInternalError;
  }
  std::lock_guard<std::mutex> lock(c->lock);
  // Posted even when the peer is gone: what it sent before may be here already. test() says
  // whether the receive can still complete.
  Request* r = takeRequest(c, true);
  if (!r) return ncclSuccess;
  const ucp_request_param_t p = requestParams(r);
  void* s = ucp_tag_recv_nbx(c->worker, data[0], sizes[0], dataTag(c, tags[0]), ~uint64_t(0), &p);
  if (UCS_PTR_IS_ERR(s)) {
    UCX_WARN("receive from %s: %s", c->peer.c_str(), ucs_status_string(UCS_PTR_STATUS(s)));
    releaseRequest(r);
    return ncclRemoteError;
  }
  r->ucp = s;
  *request = r;
  return ncclSuccess;
}

// A request that failed stays in the pool until its comm closes (UCX may still hold it).
ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  Comm* c = r->comm;
  *done = 0;
  std::unique_lock<std::mutex> lock(c->lock);
  if (!r->done) ucp_worker_progress(c->worker);
  if (!r->done) {
    // After a progress, so that what arrived before the peer's goodbye is taken first.
    if (const std::string gone = peerGone(c, false); !gone.empty()) {
      UCX_WARN("%s %s: %s", direction(c), c->peer.c_str(), gone.c_str());
      return ncclRemoteError;
    }
    return ncclSuccess;
  }
  const ucs_status_t status = r->status;
  const size_t size = r->size;
  releaseRequest(r);
  if (status != UCS_OK) {
    UCX_WARN("%s %s: %s", direction(c), c->peer.c_str(), ucs_status_string(status));
    return ncclRemoteError;
  }
  *done = 1;
  if (sizes) *sizes = static_cast<int>(size);
  if (c->sending) {
    // Its bytes may still wait in the endpoint (ucx_flusher.h).
    c->sendsCompleted++;
    lock.unlock();
    markUnflushed(c);
  }
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

}  // namespace braid::ucxnet
