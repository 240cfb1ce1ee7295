// A send or receive communicator of the UCX plugin: its own UCP worker (so that different comms
// may be driven by different threads without a shared lock: NCCL and Braid call one comm from one
// thread at a time; the comm's lock only keeps the plugin's flusher out while its caller is in),
// one endpoint to the peer's worker, and a fixed pool of requests.
//
// Tags: UCP matches a receive against the 64-bit tag of every message reaching its worker. Each
// comm's worker has one peer, and the tag still carries the connection's id beside NCCL's tag, so
// that a message can only ever match on the connection it was sent on (a stray endpoint, a reused
// address): bit 63 control, bits 62..32 the id, bits 31..0 NCCL's tag.
//
// Closing: each end posts, from the start, a receive for the other's "goodbye" (a control
// message that close sends before the endpoint goes). UCX's TCP transport takes an orderly close
// of the peer's endpoint as nothing to report when no operation of ours is on that endpoint, and
// a tag receive belongs to the worker, not the endpoint: without the goodbye a receive waiting
// on a peer that closed would wait for ever. A peer that dies instead is reported by UCX itself
// (UCP_ERR_HANDLING_MODE_PEER: the endpoint's error callback).
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "transports/net/net_plugin_api.h"

namespace braid::ucxnet {

struct Comm;

struct Request {
  Comm* comm = nullptr;
  void* ucp = nullptr;  // UCX's request, freed once its callback ran
  bool used = false;
  bool receive = false;
  bool done = false;  // set by UCX's callback, during ucp_worker_progress on the comm's thread
  ucs_status_t status = UCS_OK;
  size_t size = 0;  // bytes sent, or received (may be less than the receive's buffer)
};

struct Comm {
  /// Held around every UCX call on the comm's worker: by its caller (isend, irecv, test, close)
  /// and by the plugin's flusher (ucx_flusher.h).
  std::mutex lock;
  bool sending = false;
  uint64_t id = 0;  // the connection's id (from the listen handle)
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  std::atomic<bool> failed{false};  // the endpoint reported an error
  ucs_status_t failure = UCS_OK;
  std::string peer;  // the peer's address, for messages
  // NCCL never has more than NCCL_NET_MAX_REQUESTS in flight on a comm; past that, isend and
  // irecv answer "not now" (a NULL request).
  Request requests[NCCL_NET_MAX_REQUESTS];
  Request goodbye;        // the peer's goodbye: done once it arrived
  Request farewell;       // ours, sent by destroy()
  double goneSeenAt = 0;  // when peerGone() first saw the peer gone (steady clock, seconds)
  char goodbyeByte = 0;
  // The flusher's account (under `lock`): sends completed, those a finished flush covered, and
  // the flush in flight (UCX's request) with what it covers.
  uint64_t sendsCompleted = 0;
  uint64_t flushedUpTo = 0;
  void* flushRequest = nullptr;
  uint64_t flushCovers = 0;
};

uint64_t dataTag(const Comm* c, int tag);

/// UCX's parameters for the send or receive (`r->receive`) that completes `r` (its callback).
ucp_request_param_t requestParams(Request* r);

/// A free request of `c`'s pool, marked used; nullptr when all are in flight.
Request* takeRequest(Comm* c, bool receive);
/// Frees UCX's request and returns `r` to its pool.
void releaseRequest(Request* r);

/// The comm's worker and its address (to send to the peer).
ncclResult_t newWorker(Comm* c, std::vector<char>* address);
/// The endpoint to the peer's worker (`remote`: its address), with peer error handling, and the
/// receive of the peer's goodbye.
ncclResult_t newEndpoint(Comm* c, const std::vector<char>& remote);
/// Why the peer can no longer take part ("" while it can): its endpoint failed, or it closed.
/// `now`: as soon as that is known; else only kGoneGraceS after it was first seen here, for the
/// requests that may still complete with what the peer sent before it went.
std::string peerGone(Comm* c, bool now);
constexpr double kGoneGraceS = 0.5;

/// Ends a comm: says goodbye, cancels what can be, closes the endpoint, destroys the worker.
void destroy(Comm* c);

}  // namespace braid::ucxnet
