#include "transports/net/ucx/ucx_comm.h"

#include <chrono>

#include "transports/net/ucx/ucx_context.h"

namespace braid::ucxnet {
namespace {

constexpr uint64_t kControlBit = uint64_t(1) << 63;
constexpr uint64_t kIdMask = (uint64_t(1) << 31) - 1;

uint64_t goodbyeTag(const Comm* c) {
  return kControlBit | ((c->id & kIdMask) << 32);
}

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

// Says goodbye to a peer that may still listen: a one-byte control message. destroy() waits for
// it to complete locally before closing the endpoint (or lets the close cancel it, when the
// endpoint's wireup never finished).
void sayGoodbye(Comm* c, Request* r) {
  *r = Request{c, nullptr, true, false};
  const ucp_request_param_t p = requestParams(r);
  static const char byte = 0;
  void* s = ucp_tag_send_nbx(c->ep, &byte, 1, goodbyeTag(c), &p);
  if (UCS_PTR_IS_ERR(s)) {
    r->done = true;  // nobody to tell
    return;
  }
  r->ucp = s;
}

}  // namespace

// Completion is always reported through the callback (never "done at once"), so that a request
// has one way to finish.
ucp_request_param_t requestParams(Request* r) {
  ucp_request_param_t p{};
  p.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (r->receive)
    p.cb.recv = onReceived;
  else
    p.cb.send = onSent;
  p.user_data = r;
  return p;
}

uint64_t dataTag(const Comm* c, int tag) {
  return ((c->id & kIdMask) << 32) | static_cast<uint32_t>(tag);
}

Request* takeRequest(Comm* c, bool receive) {
  for (Request& r : c->requests)
    if (!r.used) {
      r = Request{c, nullptr, true, receive};
      return &r;
    }
  return nullptr;
}

void releaseRequest(Request* r) {
  if (r->ucp) ucp_request_free(r->ucp);
  *r = Request{};
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
  c->goodbye = Request{c, nullptr, true, true};
  const ucp_request_param_t p = requestParams(&c->goodbye);
  void* s = ucp_tag_recv_nbx(c->worker, &c->goodbyeByte, 1, goodbyeTag(c), ~uint64_t(0), &p);
  if (UCS_PTR_IS_ERR(s)) {
    UCX_WARN("receive from %s: %s", c->peer.c_str(), ucs_status_string(UCS_PTR_STATUS(s)));
    return ncclSystemError;
  }
  c->goodbye.ucp = s;
  return ncclSuccess;
}

std::string peerGone(const Comm* c) {
  if (c->failed.load()) return ucs_status_string(c->failure);
  if (c->goodbye.done && c->goodbye.status == UCS_OK) return "the peer closed its end";
  return "";
}

// Ends a communicator, never waiting on the peer for longer than kCloseWaitS (a peer that is
// alive answers in microseconds; one that is not, or that is not progressing its own worker just
// now, must not hold up an abort):
// - a goodbye goes to a peer that did not close first (see ucx_comm.h);
// - pending receives are cancelled, and the worker progressed until they, the goodbye and any
//   send still in flight completed locally (a request's memory is ours until its callback ran);
// - the endpoint is closed in UCP_EP_CLOSE_FLAG_FORCE mode. The flush mode would be the
//   polite one, but with peer error handling UCX 1.13 completes it only once the peer's worker
//   answered, which it does only while its owner calls the plugin: closing both ends in turn from
//   one thread never finishes. What was sent completed locally, so it is in the kernel's socket
//   (TCP) or the peer's memory (shared memory) already, and goes on its way.
// - the worker is destroyed.
// A request that never completes (a rendezvous send whose peer is unreachable: a cut link) cannot
// be cancelled, and closing its endpoint under it trips UCX's assertions: then the endpoint and
// worker are left as they are (a leak, on a path that ends the job anyway) rather than taking the
// process down. Likewise an endpoint whose close does not finish.
constexpr double kCloseWaitS = 0.2;

void destroy(Comm* c) {
  using Clock = std::chrono::steady_clock;
  if (c->ep && peerGone(c).empty()) sayGoodbye(c, &c->farewell);
  std::vector<Request*> all = {&c->goodbye, &c->farewell};
  for (Request& r : c->requests) all.push_back(&r);
  for (Request* r : all)
    if (r->ucp && !r->done && r->receive) ucp_request_cancel(c->worker, r->ucp);
  auto pending = [&all] {
    size_t n = 0;
    for (const Request* r : all) n += r->used && !r->done;
    return n;
  };
  const auto until = Clock::now() + std::chrono::duration<double>(kCloseWaitS);
  while (pending() > 0 && Clock::now() < until) ucp_worker_progress(c->worker);
  // Our own goodbye may wait for the endpoint's wireup, which needs the peer: the force close
  // cancels it (UCS_ERR_CANCELED through its callback).
  if (size_t stuck = pending() - (c->farewell.used && !c->farewell.done); stuck > 0) {
    UCX_INFO("%zu requests with %s never completed: leaving their endpoint and worker open", stuck,
             c->peer.c_str());
    return;
  }
  for (Request* r : all)
    if (r != &c->farewell) releaseRequest(r);
  if (c->ep) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(c->ep, &p);
    const auto end = Clock::now() + std::chrono::duration<double>(kCloseWaitS);
    while (((UCS_PTR_IS_PTR(req) && ucp_request_check_status(req) == UCS_INPROGRESS) ||
            (c->farewell.used && !c->farewell.done)) &&
           Clock::now() < end)
      ucp_worker_progress(c->worker);
    if (c->farewell.used && !c->farewell.done) {
      UCX_INFO("the goodbye to %s was neither sent nor cancelled: endpoint and worker left open",
               c->peer.c_str());
      return;
    }
    releaseRequest(&c->farewell);
    if (UCS_PTR_IS_PTR(req)) {
      if (ucp_request_check_status(req) == UCS_INPROGRESS) {
        UCX_INFO("closing the endpoint to %s did not finish in %.1f s: left open", c->peer.c_str(),
                 kCloseWaitS);
        return;  // destroying the worker under a pending close is not allowed either
      }
      ucp_request_free(req);
    }
  }
  if (c->worker) ucp_worker_destroy(c->worker);
  delete c;
}

}  // namespace braid::ucxnet
