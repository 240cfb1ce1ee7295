#include "core/bootstrap.h"

#include <netinet/in.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "core/bootstrap_root.h"
#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "util/log.h"
#include "util/random.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {
namespace {

// How long a rank whose ring broke waits for the root to say which rank left: the root sees a
// dead rank's connection close as soon as its neighbours do.
constexpr double kRootVerdictGraceS = 0.25;

}  // namespace

ncclResult_t Bootstrap::join(const ncclUniqueId& id, int rank, int nranks, const std::string& info,
                             const WaitPolicy& policy, std::unique_ptr<Bootstrap>* out,
                             std::vector<std::string>* allInfo) {
  UniqueIdFields f;
  SockAddr root;
  BRAID_TRY(unpackUniqueId(id, &f, &root));
  if ((f.flags & kRootHostedByRank0) && rank == 0) {
    SockAddr bindAddr = root;
    int lfd = -1;
    if (listenOn(&bindAddr, &lfd, kRootBacklog) != ncclSuccess) {
      // The name may resolve to an address of another interface: listen on every address.
      bindAddr = root;
      if (bindAddr.family() == AF_INET)
        reinterpret_cast<sockaddr_in*>(&bindAddr.storage)->sin_addr.s_addr = htonl(INADDR_ANY);
      else
        reinterpret_cast<sockaddr_in6*>(&bindAddr.storage)->sin6_addr = in6addr_any;
      if (ncclResult_t r = listenOn(&bindAddr, &lfd, kRootBacklog); r != ncclSuccess)
        return addContext(
            r, "rank 0 cannot host the bootstrap root at %s (NCCL_COMM_ID/MASTER_PORT in use?)",
            root.toString().c_str());
    }
    startBootstrapRoot(lfd, f, policy.timeoutS);
  }
  Deadline deadline = Deadline::after(policy.timeoutS);
  int fd = -1;
  if (ncclResult_t r = connectTo(root, deadline, policy.abort, &fd); r != ncclSuccess)
    return addContext(r, "rank %d joining the bootstrap root %s", rank, root.toString().c_str());
  tuneSocket(fd, 0);
  std::unique_ptr<Bootstrap> b(new Bootstrap(fd, rank, nranks, policy));
  // The ring port listens before the hello announces it: the rank before this one on the ring,
  // which learns of the port from the root, finds it open (a refusal there means we are gone).
  SockAddr ringAddr;  // len 0: a communicator of one rank has no ring
  if (nranks > 1) BRAID_TRY(b->ring_.listen(fd, &ringAddr));
  // A root that failed the handshake hears nothing more, not even a goodbye.
  if (ncclResult_t r = bootstrapHandshake(fd, f, nranks, rank, ringAddr, deadline, policy.abort);
      r != ncclSuccess)
    return addContext(r, "rank %d joining the bootstrap root %s", rank, root.toString().c_str());
  b->helloSent_ = true;
  std::string body;
  if (ncclResult_t r = b->readFrame(kFrameRing, &body); r != ncclSuccess)
    return addContext(r, "rank %d waiting for the other %d ranks at the bootstrap root", rank,
                      nranks - 1);
  RingAssignment assignment;
  if (!examineRingAssignment(body, nranks, &assignment))
    return fail(ncclRemoteError, "bootstrap: rank %d got a malformed ring assignment", rank);
  if (nranks > 1) {
    if (ncclResult_t r = b->ring_.link(assignment, b->ringWait()); r != ncclSuccess)
      return addContext(b->ringFailed(r), "rank %d linking into the bootstrap ring of %d ranks",
                        rank, nranks);
  }
  if (ncclResult_t r = b->ring_.allGather(info, allInfo, b->ringWait()); r != ncclSuccess)
    return addContext(b->ringFailed(r),
                      "rank %d gathering the ranks' infos over the bootstrap ring", rank);
  *out = std::move(b);
  return ncclSuccess;
}

ncclResult_t bootstrapHandshake(int fd, const UniqueIdFields& f, int nranks, int rank,
                                const SockAddr& ringAddr, const Deadline& deadline,
                                const std::atomic<uint32_t>* abort, bool verifyRoot) {
  AuthHello a{kHelloMagic, kBootstrapVersion, {}};
  if (!secureRandom(a.rankNonce, sizeof(a.rankNonce)))
    return fail(ncclSystemError, "bootstrap: no random source for the handshake nonce");
  BRAID_TRY(sendAll(fd, &a, sizeof(a), deadline, abort));
  AuthChallenge c;
  if (ncclResult_t r = recvAll(fd, &c, sizeof(c), deadline, abort); r != ncclSuccess)
    return addContext(r,
                      "waiting for the root's answer to the handshake (a root that does not "
                      "know this id closes the connection)");
  unsigned char expected[kSha256Bytes];
  bootstrapProof(f.secret, f.nonce, true, a.rankNonce, c.rootNonce, expected);
  const bool proven = c.magic == kChallengeMagic && c.version == kBootstrapVersion &&
                      constantTimeEqual(c.rootProof, expected, sizeof(expected));
  if (verifyRoot && !proven)
    return fail(ncclRemoteError,
                "the process listening there is not this communicator's bootstrap root: it did "
                "not prove the unique id's secret (a stale id, or another program on that port); "
                "nothing secret was sent to it");
  RootHello h{};
  h.magic = kHelloMagic;
  h.version = kBootstrapVersion;
  bootstrapProof(f.secret, f.nonce, false, a.rankNonce, c.rootNonce, h.proof);
  h.nonce = f.nonce;
  h.nranks = nranks;
  h.rank = rank;
  if (ringAddr.len > sizeof(h.ringAddr))
    return fail(ncclSystemError, "bootstrap: ring address %s does not fit the hello",
                ringAddr.toString().c_str());
  h.ringAddrLen = ringAddr.len;
  memcpy(h.ringAddr, &ringAddr.storage, ringAddr.len);
  return sendAll(fd, &h, sizeof(h), deadline, abort);
}

Bootstrap::~Bootstrap() {
  if (helloSent_) {
    FrameHeader bye{kFrameBye, 0};
    sendAll(fd_, &bye, sizeof(bye), Deadline::after(1), nullptr);
  }
  closeFd(fd_);
}

RingWait Bootstrap::ringWait() {
  RingWait w;
  w.deadline = Deadline::after(policy_.timeoutS);
  w.abort = policy_.abort;
  w.rootFd = fd_;
  w.rootReadable = [this] {
    std::string ignored;
    return readFrame(0, &ignored);
  };
  return w;
}

ncclResult_t Bootstrap::allGather(const std::string& mine, std::vector<std::string>* all) {
  if (ncclResult_t r = ring_.allGather(mine, all, ringWait()); r != ncclSuccess)
    return addContext(ringFailed(r), "rank %d in an all-gather over the bootstrap ring", rank_);
  return ncclSuccess;
}

ncclResult_t Bootstrap::ringFailed(ncclResult_t r) {
  ring_.close();
  if (r == ncclInvalidUsage) return r;  // aborted: nobody else is to blame
  const std::string seen = lastError();
  const Deadline grace = Deadline::after(kRootVerdictGraceS);
  while (rootVerdict_.empty() && !grace.expired()) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = poll(&p, 1, grace.remainingMs());
    if (ready < 0 && errno == EINTR) continue;
    std::string ignored;
    if (ready <= 0 || readFrame(0, &ignored) != ncclSuccess) break;
  }
  if (rootVerdict_.empty() || seen.find(rootVerdict_) != std::string::npos) {
    setLastError(seen);
    return r;
  }
  return fail(ncclRemoteError, "%s (here: %s)", rootVerdict_.c_str(), seen.c_str());
}

ncclResult_t Bootstrap::barrier() {
  Deadline deadline = Deadline::after(policy_.timeoutS);
  FrameHeader h{kFrameData, 0};
  BRAID_TRY(sendAll(fd_, &h, sizeof(h), deadline, policy_.abort));
  std::string empty;
  return readFrame(kFrameData, &empty);
}

ncclResult_t Bootstrap::readFrame(uint32_t want, std::string* body) {
  Deadline deadline = Deadline::after(policy_.timeoutS);
  for (;;) {
    FrameHeader h;
    BRAID_TRY(recvAll(fd_, &h, sizeof(h), deadline, policy_.abort));
    if (h.bytes > kMaxFrameBytes) return fail(ncclRemoteError, "bootstrap: oversized reply");
    body->assign(h.bytes, '\0');
    BRAID_TRY(recvAll(fd_, body->data(), body->size(), deadline, policy_.abort));
    if (h.kind == kFrameError) {
      rootVerdict_ = *body;
      return fail(ncclRemoteError, "%s", body->c_str());
    }
    if (h.kind == kFrameRelay && body->size() >= sizeof(int32_t)) {
      int32_t from;
      memcpy(&from, body->data(), sizeof(from));
      relayed_[from].push_back(body->substr(sizeof(from)));
      if (want == 0) return ncclSuccess;
      continue;
    }
    if (want == 0 || h.kind != want)
      return fail(ncclRemoteError, "bootstrap: unexpected reply kind %u", h.kind);
    return ncclSuccess;
  }
}

ncclResult_t Bootstrap::sendTo(int peer, const std::string& payload) {
  Deadline deadline = Deadline::after(policy_.timeoutS);
  const int32_t to = peer;
  std::string body(reinterpret_cast<const char*>(&to), sizeof(to));
  body += payload;
  FrameHeader h{kFrameRelay, static_cast<uint32_t>(body.size())};
  BRAID_TRY(sendAll(fd_, &h, sizeof(h), deadline, policy_.abort));
  return sendAll(fd_, body.data(), body.size(), deadline, policy_.abort);
}

ncclResult_t Bootstrap::recvFrom(int peer, std::string* payload) {
  for (;;) {
    auto it = relayed_.find(peer);
    if (it != relayed_.end() && !it->second.empty()) {
      *payload = std::move(it->second.front());
      it->second.pop_front();
      return ncclSuccess;
    }
    std::string ignored;
    if (ncclResult_t r = readFrame(0, &ignored); r != ncclSuccess)
      return addContext(r, "bootstrap: waiting for a message from rank %d", peer);
  }
}

}  // namespace braid
