#include "core/bootstrap_ring.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

std::atomic<RingListenHook> gListenHook{nullptr};

constexpr double kKnockTimeoutS = 5;  // a connection to a ring port must present its token
// Connections read at once: more wait in the port's queue rather than be closed, since one of
// them may be the previous rank's.
constexpr size_t kMaxKnocks = 64;

bool aborted(const std::atomic<uint32_t>* abort) {
  return abort && abort->load(std::memory_order_relaxed);
}

bool wouldBlock(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

// The length-prefixed form in which an entry travels the ring.
void appendEntry(const std::string& body, std::string* out) {
  const uint32_t len = static_cast<uint32_t>(body.size());
  out->append(reinterpret_cast<const char*>(&len), sizeof(len));
  *out += body;
}

// A connection to the ring port that has not yet shown its token.
struct Knock {
  int fd;
  std::string buf;
  Deadline until;
};

}  // namespace

void setRingListenHook(RingListenHook hook) {
  gListenHook.store(hook);
}

BootstrapRing::~BootstrapRing() {
  close();
}

void BootstrapRing::close() {
  closeFd(listenFd_);
  closeFd(nextFd_);
  closeFd(prevFd_);
  closed_ = true;
}

ncclResult_t BootstrapRing::listen(int rootFd, SockAddr* addr) {
  *addr = SockAddr{};
  addr->len = sizeof(addr->storage);
  if (getsockname(rootFd, reinterpret_cast<sockaddr*>(&addr->storage), &addr->len) != 0)
    return fail(ncclSystemError, "bootstrap ring: getsockname: %s", strerror(errno));
  addr->setPort(0);
  if (ncclResult_t r = listenOn(addr, &listenFd_, 16); r != ncclSuccess)
    return addContext(r, "rank %d opening its bootstrap ring port", rank_);
  if (RingListenHook hook = gListenHook.load()) hook(rank_, *addr);
  return ncclSuccess;
}

ncclResult_t BootstrapRing::link(const RingAssignment& a, const RingWait& wait) {
  SockAddr next;
  memcpy(&next.storage, a.nextAddr, a.nextAddrLen);
  next.len = a.nextAddrLen;
  // The port was listening before its rank joined the root, so a refusal means next is gone.
  if (ncclResult_t r = connectTo(next, wait.deadline, wait.abort, &nextFd_, true); r != ncclSuccess)
    return addContext(r, "rank %d connecting to rank %d, its next on the bootstrap ring", rank_,
                      nextRank());
  tuneSocket(nextFd_, 0);
  RingHello h{kRingMagic, kBootstrapVersion, rank_, 0, {}};
  memcpy(h.token, a.tokenToNext, kTokenBytes);
  if (ncclResult_t r = sendAll(nextFd_, &h, sizeof(h), wait.deadline, wait.abort); r != ncclSuccess)
    return addContext(r, "rank %d greeting rank %d, its next on the bootstrap ring", rank_,
                      nextRank());
  BRAID_TRY(acceptPrev(a.tokenFromPrev, wait));
  // Nobody else may connect from now on.
  closeFd(listenFd_);
  return ncclSuccess;
}

ncclResult_t BootstrapRing::acceptPrev(const unsigned char token[kTokenBytes],
                                       const RingWait& wait) {
  std::vector<Knock> knocks;
  auto drop = [&](size_t i, const char* why) {
    BRAID_WARN("bootstrap ring: rank %d dropped a connection to its ring port (%s)", rank_, why);
    ::close(knocks[i].fd);
    knocks.erase(knocks.begin() + static_cast<long>(i));
  };
  ncclResult_t result = ncclSuccess;
  while (prevFd_ < 0) {
    if (aborted(wait.abort)) {
      result = fail(ncclInvalidUsage, "bootstrap ring: rank %d aborted", rank_);
      break;
    }
    const int ms = wait.deadline.remainingMs();
    if (ms <= 0) {
      result = fail(ncclRemoteError,
                    "bootstrap ring: rank %d timed out (BRAID_TIMEOUT_S) waiting for rank %d, "
                    "its previous on the ring, to connect",
                    rank_, prevRank());
      break;
    }
    const bool room = knocks.size() < kMaxKnocks;
    std::vector<pollfd> fds{{room ? listenFd_ : -1, POLLIN, 0}, {wait.rootFd, POLLIN, 0}};
    for (const Knock& k : knocks) fds.push_back({k.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), ms < 100 ? ms : 100) < 0 && errno != EINTR) {
      result = fail(ncclSystemError, "bootstrap ring: poll: %s", strerror(errno));
      break;
    }
    if (fds[1].revents && (result = wait.rootReadable()) != ncclSuccess) break;
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) knocks.push_back({fd, {}, Deadline::after(kKnockTimeoutS)});
    }
    for (size_t i = 0; i < knocks.size();) {
      Knock& k = knocks[i];
      // Never read past the hello: what follows is the all-gather's.
      char tmp[sizeof(RingHello)];
      const ssize_t got = recv(k.fd, tmp, sizeof(RingHello) - k.buf.size(), MSG_DONTWAIT);
      if (got > 0) k.buf.append(tmp, static_cast<size_t>(got));
      const HelloVerdict v = examineRingHello(k.buf, token, prevRank());
      if (v == HelloVerdict::kAdmit) {
        prevFd_ = k.fd;
        knocks.erase(knocks.begin() + static_cast<long>(i));
        break;
      }
      if (v == HelloVerdict::kReject) {
        drop(i, "no Braid ring hello with the right token");
      } else if (got == 0 || (got < 0 && !wouldBlock(errno))) {
        drop(i, "closed before its token");
      } else if (k.until.expired()) {
        drop(i, "no token in time");
      } else {
        i++;
      }
    }
  }
  for (Knock& k : knocks) ::close(k.fd);
  if (prevFd_ >= 0) tuneSocket(prevFd_, 0);
  return result;
}

ncclResult_t BootstrapRing::pushToNext(const std::string& out, size_t* pos) {
  while (*pos < out.size()) {
    const ssize_t n =
        send(nextFd_, out.data() + *pos, out.size() - *pos, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      *pos += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && wouldBlock(errno)) return ncclSuccess;
    return fail(ncclRemoteError,
                "bootstrap ring: rank %d, next on the ring, closed the connection during an "
                "all-gather (it failed or died): %s",
                nextRank(), strerror(errno));
  }
  return ncclSuccess;
}

ncclResult_t BootstrapRing::pullFromPrev() {
  char tmp[65536];
  for (;;) {
    const ssize_t n = recv(prevFd_, tmp, sizeof(tmp), MSG_DONTWAIT);
    if (n > 0) {
      inbuf_.append(tmp, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof(tmp)) return ncclSuccess;
      continue;
    }
    if (n < 0 && wouldBlock(errno)) return ncclSuccess;
    return fail(ncclRemoteError,
                "bootstrap ring: rank %d, previous on the ring, closed the connection during an "
                "all-gather (it failed or died)%s%s",
                prevRank(), n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
  }
}

ncclResult_t BootstrapRing::waitReady(bool sending, bool receiving, const RingWait& wait) {
  if (aborted(wait.abort)) return fail(ncclInvalidUsage, "bootstrap ring: rank %d aborted", rank_);
  const int ms = wait.deadline.remainingMs();
  if (ms <= 0)
    return fail(ncclRemoteError,
                "bootstrap ring: rank %d timed out (BRAID_TIMEOUT_S) in an all-gather, %s rank %d",
                rank_, receiving ? "waiting for data from" : "sending to",
                receiving ? prevRank() : nextRank());
  // Next never sends on this connection: a readable next while entries remain for it has
  // closed (or broken the protocol), which the send below then reports.
  // (A socket left out is -1, not 0 events: a closed one would still wake poll with POLLHUP.)
  pollfd fds[3] = {{wait.rootFd, POLLIN, 0},
                   {sending ? nextFd_ : -1, POLLOUT | POLLIN, 0},
                   {receiving ? prevFd_ : -1, POLLIN, 0}};
  if (poll(fds, 3, ms < 100 ? ms : 100) < 0 && errno != EINTR)
    return fail(ncclSystemError, "bootstrap ring: poll: %s", strerror(errno));
  if (fds[0].revents) BRAID_TRY(wait.rootReadable());
  if (sending && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
    char c;
    const ssize_t n = recv(nextFd_, &c, 1, MSG_DONTWAIT);
    if (n >= 0 || !wouldBlock(errno))
      return fail(ncclRemoteError,
                  "bootstrap ring: rank %d, next on the ring, closed the connection during an "
                  "all-gather (it failed or died)",
                  nextRank());
  }
  return ncclSuccess;
}

ncclResult_t BootstrapRing::allGather(const std::string& mine, std::vector<std::string>* all,
                                      const RingWait& wait) {
  all->assign(nranks_, std::string());
  (*all)[rank_] = mine;
  if (nranks_ == 1) return ncclSuccess;
  if (closed_)
    return fail(ncclRemoteError, "bootstrap ring: rank %d left the ring after an earlier failure",
                rank_);
  // The i-th entry from prev is rank (rank - 1 - i)'s; each but the last (next's own) is passed
  // on as soon as it is whole, so sends and receives interleave and neither waits on the other
  // (a payload larger than the socket buffers cannot deadlock the ring).
  std::string out;
  appendEntry(mine, &out);
  size_t sent = 0;
  int received = 0;
  for (;;) {
    if (received < nranks_ - 1) {
      BRAID_TRY(pullFromPrev());
      size_t taken = 0;
      std::string body;
      for (FrameVerdict v; received < nranks_ - 1 &&
                           (v = takeRingEntry(inbuf_, &taken, &body)) != FrameVerdict::kNeedMore;) {
        if (v == FrameVerdict::kMalformed)
          return fail(ncclRemoteError, "bootstrap ring: malformed entry from rank %d", prevRank());
        if (received < nranks_ - 2) appendEntry(body, &out);
        (*all)[(rank_ + nranks_ - 1 - received) % nranks_] = std::move(body);
        received++;
      }
      inbuf_.erase(0, taken);
    }
    BRAID_TRY(pushToNext(out, &sent));
    if (sent == out.size()) {
      out.clear();
      sent = 0;
    }
    const bool sending = !out.empty(), receiving = received < nranks_ - 1;
    if (!sending && !receiving) break;
    BRAID_TRY(waitReady(sending, receiving, wait));
  }
  return ncclSuccess;
}

}  // namespace braid
