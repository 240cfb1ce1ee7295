#include "core/bootstrap.h"

#include <netinet/in.h>

#include <cstring>

#include "core/bootstrap_root.h"
#include "core/bootstrap_wire.h"
#include "core/unique_id.h"
#include "util/log.h"
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
  std::unique_ptr<Bootstrap> b(new Bootstrap(fd, nranks, policy));
  RootHello h{};
  h.magic = kHelloMagic;
  h.version = kBootstrapVersion;
  memcpy(h.secret, f.secret, 16);
  h.nonce = f.nonce;
  h.nranks = nranks;
  h.rank = rank;
  h.infoBytes = static_cast<uint32_t>(info.size());
  std::string hello(reinterpret_cast<const char*>(&h), sizeof(h));
  hello += info;
  BRAID_TRY(sendAll(fd, hello.data(), hello.size(), deadline, policy.abort));
  if (ncclResult_t r = b->receiveRound(allInfo); r != ncclSuccess)
    return addContext(r, "rank %d waiting for the other %d ranks at the bootstrap root", rank,
                      nranks - 1);
  *out = std::move(b);
  return ncclSuccess;
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

ncclResult_t Bootstrap::receiveRound(std::vector<std::string>* all) {
  Deadline deadline = Deadline::after(policy_.timeoutS);
  FrameHeader h;
  BRAID_TRY(recvAll(fd_, &h, sizeof(h), deadline, policy_.abort));
  if (h.bytes > kMaxFrameBytes * 4u) return fail(ncclRemoteError, "bootstrap: oversized reply");
  std::string body(h.bytes, '\0');
  BRAID_TRY(recvAll(fd_, body.data(), body.size(), deadline, policy_.abort));
  if (h.kind == kFrameError) return fail(ncclRemoteError, "%s", body.c_str());
  if (h.kind != kFrameData)
    return fail(ncclRemoteError, "bootstrap: unexpected reply kind %u", h.kind);
  if (!splitRoundReply(body, nranks_, all))
    return fail(ncclRemoteError, "bootstrap: truncated reply");
  return ncclSuccess;
}

}  // namespace braid
