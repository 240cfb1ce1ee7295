#include "util/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

#include "util/settings.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

uint16_t SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SockAddr::setPort(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SockAddr::toString() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host,
              sizeof(host));
  else if (family() == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host,
              sizeof(host));
  return (family() == AF_INET6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" +
         std::to_string(port());
}

namespace {

// NCCL_SOCKET_IFNAME semantics: comma list of prefixes; "^" negates the list; "=" exact names.
bool interfaceMatches(const std::string& spec, const char* name) {
  if (spec.empty()) return true;
  std::string s = spec;
  bool exclude = false, exact = false;
  if (!s.empty() && s[0] == '^') {
    exclude = true;
    s = s.substr(1);
  }
  if (!s.empty() && s[0] == '=') {
    exact = true;
    s = s.substr(1);
  }
  bool hit = false;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string tok = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!tok.empty() && (exact ? tok == name : strncmp(name, tok.c_str(), tok.size()) == 0))
      hit = true;
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return exclude ? !hit : hit;
}

ncclResult_t setNonBlocking(int fd, bool on) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK)) < 0)
    return fail(ncclSystemError, "fcntl: %s", strerror(errno));
  return ncclSuccess;
}

bool aborted(const std::atomic<uint32_t>* abort) {
  return abort && abort->load(std::memory_order_relaxed);
}

// Polls fd for events in slices so aborts and deadlines are noticed.
ncclResult_t pollFor(int fd, short events, const Deadline& deadline,
                     const std::atomic<uint32_t>* abort, const char* what) {
  for (;;) {
    if (aborted(abort)) return fail(ncclInvalidUsage, "%s: aborted", what);
    int ms = deadline.remainingMs();
    if (ms <= 0) return fail(ncclRemoteError, "%s: timed out", what);
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, ms < 100 ? ms : 100);
    if (r > 0) return ncclSuccess;
    if (r < 0 && errno != EINTR)
      return fail(ncclSystemError, "%s: poll: %s", what, strerror(errno));
  }
}

}  // namespace

ncclResult_t findInterfaceAddresses(std::vector<SockAddr>* out, std::vector<std::string>* names,
                                    size_t most) {
  std::string spec = settingText(Setting::kNcclSocketIfname);
  int family = settingInt(Setting::kNcclSocketFamilyV6) != 0 ? AF_INET6 : AF_INET;
  if (settingText(Setting::kNcclSocketFamily) == "AF_INET6") family = AF_INET6;
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return fail(ncclSystemError, "getifaddrs: %s", strerror(errno));
  // Without a spec, one interface: the first non-loopback, else loopback. With one, every
  // interface it matches (its first address each), in the system's order.
  std::vector<const struct ifaddrs*> picks;
  auto taken = [&](const char* name) {
    for (const struct ifaddrs* p : picks)
      if (strcmp(p->ifa_name, name) == 0) return true;
    return false;
  };
  for (int pass = 0; pass < 2 && picks.empty(); pass++) {
    for (struct ifaddrs* it = list; it && picks.size() < most; it = it->ifa_next) {
      if (!it->ifa_addr || it->ifa_addr->sa_family != family) continue;
      if (!(it->ifa_flags & IFF_UP)) continue;
      bool loop = (it->ifa_flags & IFF_LOOPBACK) != 0;
      if (spec.empty()) {
        if (pass == 0 && loop) continue;
        if (pass == 1 && !loop) continue;
      } else if (pass == 1 || !interfaceMatches(spec, it->ifa_name)) {
        continue;
      }
      if (family == AF_INET6 &&
          IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(it->ifa_addr)->sin6_addr))
        continue;
      if (taken(it->ifa_name)) continue;
      picks.push_back(it);
      if (spec.empty()) break;
    }
  }
  if (picks.empty()) {
    freeifaddrs(list);
    return fail(ncclSystemError, "no usable network interface (NCCL_SOCKET_IFNAME=%s)",
                spec.c_str());
  }
  out->clear();
  if (names) names->clear();
  for (const struct ifaddrs* pick : picks) {
    SockAddr addr;
    addr.len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&addr.storage, pick->ifa_addr, addr.len);
    addr.setPort(0);
    out->push_back(addr);
    if (names) names->push_back(pick->ifa_name);
  }
  freeifaddrs(list);
  return ncclSuccess;
}

ncclResult_t findInterfaceAddress(SockAddr* out, std::string* ifName) {
  std::vector<SockAddr> addrs;
  std::vector<std::string> names;
  BRAID_TRY(findInterfaceAddresses(&addrs, &names, 1));
  *out = addrs[0];
  if (ifName) *ifName = names[0];
  return ncclSuccess;
}

ncclResult_t parseHostPort(const std::string& text, SockAddr* out) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return fail(ncclInvalidArgument, "bad address '%s' (expected [v6]:port)", text.c_str());
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos)
      return fail(ncclInvalidArgument, "bad address '%s' (expected host:port)", text.c_str());
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  struct addrinfo hints = {}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res)
    return fail(ncclInvalidArgument, "cannot resolve '%s': %s", text.c_str(), gai_strerror(rc));
  *out = SockAddr{};
  out->len = res->ai_addrlen;
  memcpy(&out->storage, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return ncclSuccess;
}

ncclResult_t listenOn(SockAddr* addr, int* fd, int backlog) {
  int s = socket(addr->family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return fail(ncclSystemError, "socket: %s", strerror(errno));
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, reinterpret_cast<sockaddr*>(&addr->storage), addr->len) != 0) {
    int e = errno;
    close(s);
    return fail(ncclSystemError, "bind %s: %s", addr->toString().c_str(), strerror(e));
  }
  if (listen(s, backlog) != 0) {
    int e = errno;
    close(s);
    return fail(ncclSystemError, "listen: %s", strerror(e));
  }
  socklen_t len = sizeof(addr->storage);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr->storage), &len);
  addr->len = len;
  *fd = s;
  return ncclSuccess;
}

ncclResult_t connectTo(const SockAddr& addr, const Deadline& deadline,
                       const std::atomic<uint32_t>* abort, int* fd, bool refusedIsFinal) {
  int delayMs = 1;
  for (;;) {
    int s = socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return fail(ncclSystemError, "socket: %s", strerror(errno));
    BRAID_TRY(setNonBlocking(s, true));
    int rc = connect(s, reinterpret_cast<const sockaddr*>(&addr.storage), addr.len);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      ncclResult_t r = pollFor(s, POLLOUT, deadline, abort, "connect");
      if (r != ncclSuccess) {
        close(s);
        return addContext(r, "connecting to %s", addr.toString().c_str());
      }
      socklen_t len = sizeof(err);
      getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      BRAID_TRY(setNonBlocking(s, false));
      *fd = s;
      return ncclSuccess;
    }
    close(s);
    if (err == ECONNREFUSED && refusedIsFinal)
      return fail(ncclRemoteError, "connect %s: connection refused (the peer has exited?)",
                  addr.toString().c_str());
    bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == ECONNRESET ||
                 err == EHOSTUNREACH || err == ENETUNREACH || err == EAGAIN;
    if (!retry)
      return fail(ncclSystemError, "connect %s: %s", addr.toString().c_str(), strerror(err));
    if (aborted(abort))
      return fail(ncclInvalidUsage, "connect %s: aborted", addr.toString().c_str());
    if (deadline.expired())
      return fail(ncclRemoteError, "connect %s: %s until timeout", addr.toString().c_str(),
                  strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    if (delayMs < 100) delayMs *= 2;
  }
}

ncclResult_t acceptFrom(int listenFd, const Deadline& deadline, const std::atomic<uint32_t>* abort,
                        int* fd) {
  return acceptFromAny({listenFd}, deadline, abort, fd);
}

ncclResult_t acceptFromAny(const std::vector<int>& listenFds, const Deadline& deadline,
                           const std::atomic<uint32_t>* abort, int* fd) {
  std::vector<pollfd> fds;
  for (int l : listenFds) fds.push_back({l, POLLIN, 0});
  for (;;) {
    if (aborted(abort)) return fail(ncclInvalidUsage, "accept: aborted");
    const int ms = deadline.remainingMs();
    if (ms <= 0) return fail(ncclRemoteError, "accept: timed out");
    const int r = poll(fds.data(), fds.size(), ms < 100 ? ms : 100);
    if (r < 0 && errno != EINTR) return fail(ncclSystemError, "accept: poll: %s", strerror(errno));
    for (const pollfd& p : fds)
      if (r > 0 && (p.revents & POLLIN)) {
        const int s = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (s < 0) return fail(ncclSystemError, "accept: %s", strerror(errno));
        *fd = s;
        return ncclSuccess;
      }
  }
}

ncclResult_t sendAll(int fd, const void* buf, size_t len, const Deadline& deadline,
                     const std::atomic<uint32_t>* abort) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      BRAID_TRY(pollFor(fd, POLLOUT, deadline, abort, "send"));
      continue;
    }
    return fail(ncclRemoteError, "send: %s (peer closed the connection?)", strerror(errno));
  }
  return ncclSuccess;
}

ncclResult_t recvAll(int fd, void* buf, size_t len, const Deadline& deadline,
                     const std::atomic<uint32_t>* abort) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return fail(ncclRemoteError, "recv: connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      BRAID_TRY(pollFor(fd, POLLIN, deadline, abort, "recv"));
      continue;
    }
    return fail(ncclRemoteError, "recv: %s", strerror(errno));
  }
  return ncclSuccess;
}

void tuneSocket(int fd, int bufferBytes) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  if (bufferBytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufferBytes, sizeof(bufferBytes));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufferBytes, sizeof(bufferBytes));
  }
}

void preferDelayedAcks(int fd) {
  int zero = 0;
  setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &zero, sizeof(zero));
}

void closeFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace braid
