#include "transports/net/ucx/ucx_comm.h"

#include <chrono>

#include "transports/net/ucx/ucx_context.h"
#include "transports/net/ucx/ucx_flusher.h"

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

// A goodbye that came after its receive was cancelled (both ends closing at once) waits in UCX's
// queue of unexpected messages; taken out, so that destroying the worker does not warn of it.
void drainGoodbyes(Comm* c) {
  ucp_tag_recv_info_t info;
  while (ucp_tag_message_h m = ucp_tag_probe_nb(c->worker, goodbyeTag(c), ~uint64_t(0), 1, &info)) {
    Request r{c, nullptr, true, true};
    const ucp_request_param_t p = requestParams(&r);
    void* s = ucp_tag_msg_recv_nbx(c->worker, &c->goodbyeByte, 1, m, &p);
    if (UCS_PTR_IS_ERR(s)) return;
    for (int i = 0; i < 1000 && !r.done; i++) ucp_worker_progress(c->worker);  // here already
    if (!r.done) return;  // never seen; left to UCX rather than freed under it
    if (s) ucp_request_free(s);
  }
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
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // the caller or the flusher, under c->lock
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

std::string peerGone(Comm* c, bool now) {
  std::string why;
  if (c->failed.load())
    why = ucs_status_string(c->failure);
  else if (c->goodbye.done && c->goodbye.status == UCS_OK)
    why = "the peer closed its end";
  if (why.empty() || now) return why;
  // UCX orders the matching of a connection's messages, not the arrival of a rendezvous' data
  // (it may take other lanes), and the end of the peer (its goodbye, or its socket closing: an
  // endpoint error) may be seen before all it sent: a transfer under way may still finish.
  const double t =
      std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  if (c->goneSeenAt == 0) c->goneSeenAt = t;
  return t - c->goneSeenAt > kGoneGraceS ? why : "";
}

// Ends a communicator, never waiting on the peer for longer than kCloseWait at each step (a
// peer that is alive and progressing answers in microseconds; one that is dead, cut off, or not
// calling the plugin just now must not hold up a close or an abort):
// 1. a goodbye goes to a peer that did not leave first (see ucx_comm.h); pending receives are
//    cancelled, and the worker progressed until they and the sends in flight completed (a
//    request's memory is ours until its callback ran);
// 2. the endpoint is flushed: a send that completed may still wait in UCX's own buffer (TCP)
//    until the socket takes it, and would be lost by the close;
// 3. the endpoint is closed in UCP_EP_CLOSE_FLAG_FORCE mode, which cancels what is left (a goodbye
//    waiting for the endpoint's wireup, an unanswered flush), and the worker destroyed.
// With peer error handling, UCX 1.13 completes a flush (and a close in flush mode) only once the
// peer's worker answered, which it does only while its owner calls the plugin: closing both ends
// in turn from one thread never sees it. Hence the cap, after which step 3 goes ahead: only a
// send that never left the socket's way can be lost, and only when the peer stopped reading.
// A caller's send that never completes (a rendezvous whose peer is unreachable: a cut link) cannot
// be cancelled, and closing its endpoint under it trips UCX's assertions: then the endpoint and
// worker are left as they are (a leak, on a path that ends the job anyway) rather than taking the
// process down. Likewise anything that even the force close does not complete.
constexpr std::chrono::duration<double> kCloseWait{0.2};

namespace {

bool inProgress(void* ucpRequest) {
  return UCS_PTR_IS_PTR(ucpRequest) && ucp_request_check_status(ucpRequest) == UCS_INPROGRESS;
}
bool inFlight(const Request& r) {
  return r.used && !r.done;
}

// Progresses the comm's worker until `done()` or kCloseWait passed; whether `done()`.
template <class Done>
bool progressUntil(Comm* c, Done done) {
  const auto until = std::chrono::steady_clock::now() + kCloseWait;
  while (!done() && std::chrono::steady_clock::now() < until) ucp_worker_progress(c->worker);
  return done();
}

}  // namespace

void destroy(Comm* c) {
  forgetUnflushed(c);
  std::unique_lock<std::mutex> lock(c->lock);
  // The flusher's flush in flight is finished (or cancelled by the close) with destroy's own.
  void* flusherFlush = c->flushRequest;
  c->flushRequest = nullptr;
  const bool alive = c->ep && peerGone(c, true).empty();
  if (alive) sayGoodbye(c, &c->farewell);
  for (Request& r : c->requests)
    if (r.receive && inFlight(r)) ucp_request_cancel(c->worker, r.ucp);
  auto callersDone = [c] {
    for (const Request& r : c->requests)
      if (inFlight(r)) return false;
    return true;
  };
  progressUntil(c, [&] { return callersDone() && !inFlight(c->farewell); });
  if (!callersDone()) {
    UCX_INFO("requests with %s never completed: leaving their endpoint and worker open",
             c->peer.c_str());
    return;
  }
  for (Request& r : c->requests) releaseRequest(&r);
  void* flush = nullptr;
  if (alive && !inFlight(c->farewell)) {
    ucp_request_param_t none{};
    flush = ucp_ep_flush_nbx(c->ep, &none);
    if (!progressUntil(c, [&] { return !inProgress(flush); }))
      UCX_INFO("%s did not confirm a flush in %.1f s: closing anyway", c->peer.c_str(),
               kCloseWait.count());
  }
  // The peer's goodbye stays awaited until now: one that came after its receive was cancelled
  // would wait in UCX's unexpected queue (drainGoodbyes takes it out).
  if (inFlight(c->goodbye)) ucp_request_cancel(c->worker, c->goodbye.ucp);
  void* close = nullptr;
  if (c->ep) {
    ucp_request_param_t force{};
    force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    force.flags = UCP_EP_CLOSE_FLAG_FORCE;
    close = ucp_ep_close_nbx(c->ep, &force);
  }
  if (!progressUntil(c, [&] {
        return !inProgress(close) && !inProgress(flush) && !inProgress(flusherFlush) &&
               !inFlight(c->farewell) && !inFlight(c->goodbye);
      })) {
    UCX_INFO("closing the endpoint to %s did not finish in %.1f s: endpoint and worker left open",
             c->peer.c_str(), kCloseWait.count());
    return;  // destroying the worker under a pending request is not allowed either
  }
  if (UCS_PTR_IS_PTR(flush)) ucp_request_free(flush);
  if (UCS_PTR_IS_PTR(flusherFlush)) ucp_request_free(flusherFlush);
  if (UCS_PTR_IS_PTR(close)) ucp_request_free(close);
  releaseRequest(&c->farewell);
  releaseRequest(&c->goodbye);
  if (c->worker) {
    drainGoodbyes(c);
    ucp_worker_destroy(c->worker);
  }
  lock.unlock();
  delete c;
}

}  // namespace braid::ucxnet
