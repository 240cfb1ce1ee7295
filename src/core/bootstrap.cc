#include "core/bootstrap.h"

#include <netinet/in.h>

#include <cstring>

#include "core/bootstrap_root.h"
#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "util/log.h"
#include "util/random.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {

ncclResult_t Bootstrap::join(const ncclUniqueId& id, int rank, int nranks, const std::string& info,
                             const WaitPolicy& policy, std::unique_ptr<Bootstrap>* out,
                             std::vector<std::string>* allInfo) {
  UniqueIdFields f;
  SockAddr root;
  BRAID_TRY(unpackUniqueId(id, &f, &root));
  if ((f.flags & kRootHostedByRank0) && rank == 0) {
    SockAddr bindAddr = root;
    int lfd = -1;
    if (listenOn(&bindAddr, &lfd) != ncclSuccess) {
      // The name may resolve to an address of another interface: listen on every address.
      bindAddr = root;
      if (bindAddr.family() == AF_INET)
        reinterpret_cast<sockaddr_in*>(&bindAddr.storage)->sin_addr.s_addr = htonl(INADDR_ANY);
      else
        reinterpret_cast<sockaddr_in6*>(&bindAddr.storage)->sin6_addr = in6addr_any;
      if (ncclResult_t r = listenOn(&bindAddr, &lfd); r != ncclSuccess)
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
  // A root that failed the handshake hears nothing more, not even a goodbye.
  if (ncclResult_t r = bootstrapHandshake(fd, f, nranks, rank, info, deadline, policy.abort);
      r != ncclSuccess) {
    closeFd(fd);
    return addContext(r, "rank %d joining the bootstrap root %s", rank, root.toString().c_str());
  }
  std::unique_ptr<Bootstrap> b(new Bootstrap(fd, nranks, policy));
  if (ncclResult_t r = b->receiveRound(allInfo); r != ncclSuccess)
    return addContext(r, "rank %d waiting for the other %d ranks at the bootstrap root", rank,
                      nranks - 1);
  *out = std::move(b);
  return ncclSuccess;
}

ncclResult_t bootstrapHandshake(int fd, const UniqueIdFields& f, int nranks, int rank,
                                const std::string& info, const Deadline& deadline,
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
  h.infoBytes = static_cast<uint32_t>(info.size());
  std::string hello(reinterpret_cast<const char*>(&h), sizeof(h));
  hello += info;
  return sendAll(fd, hello.data(), hello.size(), deadline, abort);
}

Bootstrap::~Bootstrap() {
  FrameHeader bye{kFrameBye, 0};
  sendAll(fd_, &bye, sizeof(bye), Deadline::after(1), nullptr);
  closeFd(fd_);
}

ncclResult_t Bootstrap::allGather(const std::string& mine, std::vector<std::string>* all) {
  Deadline deadline = Deadline::after(policy_.timeoutS);
  FrameHeader h{kFrameData, static_cast<uint32_t>(mine.size())};
  BRAID_TRY(sendAll(fd_, &h, sizeof(h), deadline, policy_.abort));
  BRAID_TRY(sendAll(fd_, mine.data(), mine.size(), deadline, policy_.abort));
  return receiveRound(all);
}

ncclResult_t Bootstrap::barrier() {
  std::vector<std::string> ignored;
  return allGather(std::string(), &ignored);
}

ncclResult_t Bootstrap::readFrame(bool round, std::string* body) {
  Deadline deadline = Deadline::after(policy_.timeoutS);
  for (;;) {
    FrameHeader h;
    BRAID_TRY(recvAll(fd_, &h, sizeof(h), deadline, policy_.abort));
    if (h.bytes > kMaxFrameBytes * 4u) return fail(ncclRemoteError, "bootstrap: oversized reply");
    body->assign(h.bytes, '\0');
    BRAID_TRY(recvAll(fd_, body->data(), body->size(), deadline, policy_.abort));
    if (h.kind == kFrameError) return fail(ncclRemoteError, "%s", body->c_str());
    if (h.kind == kFrameRelay && body->size() >= sizeof(int32_t)) {
      int32_t from;
      memcpy(&from, body->data(), sizeof(from));
      relayed_[from].push_back(body->substr(sizeof(from)));
      if (!round) return ncclSuccess;
      continue;
    }
    if (h.kind != kFrameData || !round)
      return fail(ncclRemoteError, "bootstrap: unexpected reply kind %u", h.kind);
    return ncclSuccess;
  }
}

ncclResult_t Bootstrap::receiveRound(std::vector<std::string>* all) {
  std::string body;
  BRAID_TRY(readFrame(/*round=*/true, &body));
  if (!splitRoundReply(body, nranks_, all))
    return fail(ncclRemoteError, "bootstrap: truncated reply");
  return ncclSuccess;
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
    if (ncclResult_t r = readFrame(/*round=*/false, &ignored); r != ncclSuccess)
      return addContext(r, "bootstrap: waiting for a message from rank %d", peer);
  }
}

}  // namespace braid
