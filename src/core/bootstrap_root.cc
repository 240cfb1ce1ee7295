#include "core/bootstrap_root.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/bootstrap_wire.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/random.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr double kHelloTimeoutS = 5;  // a connection must introduce itself within this
// Connections read at once before they proved anything: more wait in the accept queue (a flood
// of idle ones must not exhaust us, nor get ranks arriving meanwhile closed).
constexpr size_t kMaxPending = 1024;

// Counted when a message is queued or written, before any rank can read it, so a test that has
// seen a rank get something sees it counted.
std::atomic<uint64_t> gBytesSent{0};

struct Pending {
  int fd;
  std::string buf;
  Deadline deadline;
  bool challenged = false;                    ///< AuthChallenge sent; RootHello expected next
  unsigned char expected[kSha256Bytes] = {};  ///< the proof this connection's rank must give
};

struct RankConn {
  int fd = -1;
  std::string inbuf;
  int barriers = 0;  ///< barriers this rank entered that are not yet answered
  unsigned char ringAddr[kRingAddrBytes] = {};
  uint32_t ringAddrLen = 0;
  /// Frames for the rank not yet written (its ring assignment, relays and barrier answers, in
  /// order): the root never blocks on one rank's socket, since that rank may itself be blocked
  /// sending to the root.
  std::string outbuf;
  Deadline outSince;  ///< when outbuf last became non-empty or drained some
  bool bye = false;
};

class Root {
 public:
  Root(int listenFd, const UniqueIdFields& id, double timeoutS)
      : listenFd_(listenFd), id_(id), timeoutS_(timeoutS) {}

  void run() {
    Deadline idle = Deadline::after(timeoutS_);
    while (!finished()) {
      std::vector<pollfd> fds;
      const bool room = listenFd_ >= 0 && pending_.size() < kMaxPending;
      fds.push_back({room ? listenFd_ : -1, POLLIN, 0});
      for (auto& p : pending_)
        if (p.fd >= 0) fds.push_back({p.fd, POLLIN, 0});
      for (auto& r : ranks_)
        if (r.fd >= 0)
          fds.push_back({r.fd, static_cast<short>(POLLIN | (r.outbuf.empty() ? 0 : POLLOUT)), 0});
      int n = poll(fds.data(), fds.size(), 100);
      if (n < 0 && errno != EINTR) break;
      if (listenFd_ >= 0 && (fds[0].revents & POLLIN)) acceptOne();
      servePending();
      if (failure_.empty() && (!serveRanks() || !flushRanks())) {
        // Ranks still on their way would knock on a closed port until their deadline, unable
        // to tell a failed rendezvous from a late one: keep the port and tell them why.
        for (auto& r : ranks_)
          if (r.fd >= 0) close(r.fd), r.fd = -1;
        if (admitted_ || listenFd_ < 0) break;
      }
      if (!admitted_ && idle.expired()) {
        BRAID_WARN("bootstrap root: not every rank arrived within %.0f s; giving up", timeoutS_);
        broadcastError("bootstrap: not every rank arrived before the timeout");
        break;
      }
    }
    if (listenFd_ >= 0) close(listenFd_);
    for (auto& p : pending_)
      if (p.fd >= 0) close(p.fd);
    for (auto& r : ranks_)
      if (r.fd >= 0) close(r.fd);
  }

 private:
  bool finished() const {
    if (!admitted_) return false;
    for (auto& r : ranks_)
      if (!r.bye) return false;
    return true;
  }

  void acceptOne() {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    // Replies go out as a header and a payload: without TCP_NODELAY the payload waits for the
    // rank's delayed ACK (40 ms), several times per init.
    tuneSocket(fd, 0);
    pending_.push_back({fd, {}, Deadline::after(kHelloTimeoutS)});
  }

  // Reads hellos without blocking; admits a rank once its hello and info are complete and valid.
  void servePending() {
    for (size_t i = 0; i < pending_.size();) {
      Pending& p = pending_[i];
      bool drop = p.deadline.expired();
      char tmp[4096];
      for (;;) {
        ssize_t got = recv(p.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
        if (got > 0) {
          p.buf.append(tmp, got);
          if (p.buf.size() > sizeof(AuthHello) + sizeof(RootHello)) drop = true;
          continue;
        }
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) drop = true;
        break;
      }
      if (p.fd < 0) {
        pending_.erase(pending_.begin() + i);
        continue;
      }
      int verdict = drop ? -1 : examine(p);
      if (verdict != 0) {
        if (verdict < 0) close(p.fd);
        pending_.erase(pending_.begin() + i);
        continue;
      }
      i++;
    }
  }

  // Answers a connection's AuthHello with this root's nonce and proof, and remembers the proof
  // its rank must give. 0: need more bytes; 1: challenged; -1: reject.
  int challenge(Pending& p) {
    AuthHello a;
    HelloVerdict verdict = examineAuthHello(p.buf, &a);
    if (verdict == HelloVerdict::kNeedMore) return 0;
    if (verdict == HelloVerdict::kReject) {
      BRAID_WARN("bootstrap root: rejected a connection that does not open with a Braid hello");
      return -1;
    }
    AuthChallenge c{kChallengeMagic, kBootstrapVersion, {}, {}};
    if (!secureRandom(c.rootNonce, sizeof(c.rootNonce))) return -1;
    bootstrapProof(id_.secret, id_.nonce, true, a.rankNonce, c.rootNonce, c.rootProof);
    bootstrapProof(id_.secret, id_.nonce, false, a.rankNonce, c.rootNonce, p.expected);
    gBytesSent += sizeof(c);
    if (sendAll(p.fd, &c, sizeof(c), Deadline::after(1), nullptr) != ncclSuccess) return -1;
    p.buf.erase(0, sizeof(AuthHello));
    p.challenged = true;
    return 1;
  }

  // 0: need more bytes; 1: admitted; -1: reject.
  int examine(Pending& p) {
    if (!p.challenged) {
      if (int c = challenge(p); c <= 0) return c;
    }
    RootHello h;
    HelloVerdict verdict = examineHello(p.buf, p.expected, id_.nonce, &h);
    if (verdict == HelloVerdict::kNeedMore) return 0;
    if (verdict == HelloVerdict::kReject) {
      BRAID_WARN(
          "bootstrap root: rejected a connection that did not prove this communicator's "
          "secret");
      return -1;
    }
    if (!failure_.empty()) {  // a rank arriving after the rendezvous failed: tell it why
      FrameHeader e{kFrameError, static_cast<uint32_t>(failure_.size())};
      Deadline d = Deadline::after(1);
      gBytesSent += sizeof(e) + failure_.size();
      if (sendAll(p.fd, &e, sizeof(e), d, nullptr) == ncclSuccess)
        sendAll(p.fd, failure_.data(), failure_.size(), d, nullptr);
      return -1;
    }
    if (ranks_.empty()) ranks_.resize(h.nranks);
    if (static_cast<size_t>(h.nranks) != ranks_.size() || ranks_[h.rank].fd >= 0 || admitted_) {
      BRAID_WARN("bootstrap root: rejected rank %d of %d (inconsistent or duplicate)", h.rank,
                 h.nranks);
      return -1;
    }
    RankConn& r = ranks_[h.rank];
    r.fd = p.fd;
    memcpy(r.ringAddr, h.ringAddr, sizeof(r.ringAddr));
    r.ringAddrLen = h.ringAddrLen;
    r.inbuf = p.buf.substr(sizeof(RootHello));
    if (++joined_ == static_cast<int>(ranks_.size())) {
      // Everyone is in: free the port at once (NCCL_COMM_ID may be reused by the next
      // communicator) and drop whoever is still knocking.
      admitted_ = true;
      close(listenFd_);
      listenFd_ = -1;
      for (auto& q : pending_)
        if (q.fd != p.fd) close(q.fd), q.fd = -1;
      assignRing();
    }
    return 1;
  }

  // Tells each rank where its next on the ring listens and the tokens of its two ring links:
  // a constant-size frame per rank, whatever the communicator's size.
  void assignRing() {
    const size_t n = ranks_.size();
    std::vector<unsigned char> tokens(n * kTokenBytes);
    if (!secureRandom(tokens.data(), tokens.size())) {
      broadcastError("bootstrap: the root has no random source for the ring tokens");
      return;
    }
    for (size_t rank = 0; rank < n; rank++) {
      const RankConn& next = ranks_[(rank + 1) % n];
      RingAssignment a{};
      memcpy(a.nextAddr, next.ringAddr, sizeof(a.nextAddr));
      a.nextAddrLen = next.ringAddrLen;
      memcpy(a.tokenToNext, &tokens[rank * kTokenBytes], kTokenBytes);
      memcpy(a.tokenFromPrev, &tokens[(rank + n - 1) % n * kTokenBytes], kTokenBytes);
      queue(ranks_[rank], kFrameRing, std::string(reinterpret_cast<const char*>(&a), sizeof(a)));
    }
  }

  // Reads frames from admitted ranks; once every rank has entered a barrier, answers it.
  bool serveRanks() {
    for (size_t rank = 0; rank < ranks_.size(); rank++) {
      RankConn& r = ranks_[rank];
      if (r.fd < 0 || r.bye) continue;
      char tmp[65536];
      bool closed = false;
      for (;;) {
        ssize_t got = recv(r.fd, tmp, sizeof(tmp), MSG_DONTWAIT);
        if (got > 0) {
          r.inbuf.append(tmp, got);
          continue;
        }
        closed = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
        break;
      }
      FrameHeader h;
      std::string body;
      for (FrameVerdict v; (v = takeRankFrame(&r.inbuf, &h, &body)) != FrameVerdict::kNeedMore;) {
        if (v == FrameVerdict::kMalformed) {
          broadcastError("bootstrap: malformed frame from rank " + std::to_string(rank));
          return false;
        }
        if (h.kind == kFrameBye) {
          r.bye = true;
        } else if (h.kind == kFrameRelay) {
          if (!relay(static_cast<int32_t>(rank), body)) return false;
        } else {
          r.barriers++;
        }
      }
      // A rank that said goodbye and closed at once is read in one pass: its goodbye comes
      // first (it was read before the end of the stream), so only a close without one is a
      // rank gone early.
      if (closed && !r.bye) {
        std::string msg = "bootstrap: rank " + std::to_string(rank) +
                          " left before the others (process died or aborted)";
        BRAID_WARN("%s", msg.c_str());
        broadcastError(msg);
        return false;
      }
    }
    if (!admitted_) return true;
    for (auto& r : ranks_)
      if (r.barriers == 0) return true;
    // Everyone entered the barrier: the answer says only that (the all-gathers, which carry
    // data, run over the ring).
    for (auto& r : ranks_) {
      r.barriers--;
      queue(r, kFrameData, std::string());
    }
    return true;
  }

  void queue(RankConn& r, uint32_t kind, const std::string& body) {
    if (r.outbuf.empty()) r.outSince = Deadline::after(timeoutS_);
    FrameHeader h{kind, static_cast<uint32_t>(body.size())};
    gBytesSent += sizeof(h) + body.size();
    r.outbuf.append(reinterpret_cast<const char*>(&h), sizeof(h));
    r.outbuf += body;
  }

  // Writes what each rank's socket takes now. False (everyone told) when a socket failed or a
  // rank read nothing for the timeout.
  bool flushRanks() {
    for (size_t rank = 0; rank < ranks_.size(); rank++) {
      RankConn& r = ranks_[rank];
      while (r.fd >= 0 && !r.outbuf.empty()) {
        ssize_t sent = send(r.fd, r.outbuf.data(), r.outbuf.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (sent > 0) {
          r.outbuf.erase(0, static_cast<size_t>(sent));
          r.outSince = Deadline::after(timeoutS_);
          continue;
        }
        if (sent < 0 && errno == EINTR) continue;
        if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !r.outSince.expired()) break;
        broadcastError("bootstrap: rank " + std::to_string(rank) + " stopped reading");
        return false;
      }
    }
    return true;
  }

  // Queues a relay frame from rank `from` (its body: the target rank, then the payload) for its
  // target, with the target replaced by `from`. False (everyone told) when there is no target.
  bool relay(int32_t from, std::string& body) {
    int32_t to;
    memcpy(&to, body.data(), sizeof(to));
    if (to < 0 || static_cast<size_t>(to) >= ranks_.size() || ranks_[to].fd < 0) {
      broadcastError("bootstrap: rank " + std::to_string(from) + " sent a message for rank " +
                     std::to_string(to) + ", which is not in the communicator");
      return false;
    }
    memcpy(body.data(), &from, sizeof(from));
    queue(ranks_[to], kFrameRelay, body);
    return true;
  }

  void broadcastError(const std::string& msg) {
    failure_ = msg;
    // (A frame half written is lost with the rest: the rank reads the error or a broken stream,
    // and fails either way.)
    FrameHeader h{kFrameError, static_cast<uint32_t>(msg.size())};
    Deadline d = Deadline::after(1);
    for (auto& r : ranks_) {
      if (r.fd < 0) continue;
      r.outbuf.clear();
      gBytesSent += sizeof(h) + msg.size();
      if (sendAll(r.fd, &h, sizeof(h), d, nullptr) == ncclSuccess)
        sendAll(r.fd, msg.data(), msg.size(), d, nullptr);
    }
  }

  int listenFd_;
  UniqueIdFields id_;
  double timeoutS_;
  std::vector<Pending> pending_;
  std::vector<RankConn> ranks_;
  int joined_ = 0;
  bool admitted_ = false;
  std::string failure_;  ///< set once the rendezvous failed: latecomers get this error
};

}  // namespace

uint64_t bootstrapRootBytesSent() {
  return gBytesSent.load();
}

void startBootstrapRoot(int listenFd, const UniqueIdFields& id, double timeoutS) {
  std::thread([listenFd, id, timeoutS] {
    Root root(listenFd, id, timeoutS);
    root.run();
  }).detach();
}

}  // namespace braid
