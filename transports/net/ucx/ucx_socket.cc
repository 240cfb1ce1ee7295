#include "transports/net/ucx/ucx_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace braid::ucxnet {
namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// NCCL_SOCKET_IFNAME's rule: a comma-separated list of prefixes; a leading '^' excludes them,
// a leading '=' asks for exact names.
bool matches(const std::string& name, const char* spec) {
  bool exclude = false, exact = false;
  if (*spec == '^') exclude = true, spec++;
  if (*spec == '=') exact = true, spec++;
  std::stringstream list(spec);
  bool hit = false;
  for (std::string item; std::getline(list, item, ',');)
    if (!item.empty() && (exact ? name == item : name.compare(0, item.size(), item) == 0))
      hit = true;
  return exclude ? !hit : hit;
}

bool io(int fd, char* p, size_t n, bool sending, double deadline) {
  while (n > 0) {
    const ssize_t r = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (r > 0) {
      p += r, n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0 && !sending) return false;  // the peer closed
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
    const double left = deadline - seconds();
    if (left <= 0) return false;
    pollfd pf{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    poll(&pf, 1, static_cast<int>(left * 1000) + 1);
  }
  return true;
}

}  // namespace

std::string Endpoint::text() const {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

bool chooseEndpoint(Endpoint* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  const char* spec = getenv("NCCL_SOCKET_IFNAME");
  const ifaddrs* best = nullptr;
  const ifaddrs* loopback = nullptr;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      continue;
    if (spec && *spec) {
      if (matches(i->ifa_name, spec) &&
          (!best || (best->ifa_addr->sa_family == AF_INET6 && family == AF_INET)))
        best = i;
      continue;
    }
    if (i->ifa_flags & IFF_LOOPBACK) {
      if (!loopback) loopback = i;
    } else if (!best || (best->ifa_addr->sa_family == AF_INET6 && family == AF_INET)) {
      best = i;
    }
  }
  if (!best) best = (spec && *spec) ? nullptr : loopback;
  if (best) {
    out->len = best->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&out->addr, best->ifa_addr, out->len);
    out->ifname = best->ifa_name;
  }
  freeifaddrs(list);
  return best != nullptr;
}

int listenOn(Endpoint* ep) {
  const int fd = socket(ep->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (ep->addr.ss_family == AF_INET)
    reinterpret_cast<sockaddr_in*>(&ep->addr)->sin_port = 0;
  else
    reinterpret_cast<sockaddr_in6*>(&ep->addr)->sin6_port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&ep->addr), ep->len) != 0 || ::listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&ep->addr), &ep->len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int startConnect(const Endpoint& to) {
  const int fd = socket(to.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, 1 /* TCP_NODELAY */, &one, sizeof(one));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to.addr), to.len) != 0 &&
      errno != EINPROGRESS) {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int connectDone(int fd) {
  pollfd pf{fd, POLLOUT, 0};
  if (poll(&pf, 1, 0) <= 0) return 0;
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return -1;
  if (err != 0) {
    errno = err;
    return -1;
  }
  return 1;
}

bool sendMessage(int fd, const void* data, uint32_t len, double timeoutS) {
  const double deadline = seconds() + timeoutS;
  return io(fd, reinterpret_cast<char*>(&len), sizeof(len), true, deadline) &&
         io(fd, static_cast<char*>(const_cast<void*>(data)), len, true, deadline);
}

bool recvMessage(int fd, std::vector<char>* out, uint32_t maxLen, double timeoutS) {
  const double deadline = seconds() + timeoutS;
  uint32_t len = 0;
  if (!io(fd, reinterpret_cast<char*>(&len), sizeof(len), false, deadline) || len > maxLen)
    return false;
  out->resize(len);
  return io(fd, out->data(), len, false, deadline);
}

bool readable(int fd) {
  pollfd pf{fd, POLLIN, 0};
  return poll(&pf, 1, 0) > 0 && (pf.revents & (POLLIN | POLLHUP | POLLERR));
}

}  // namespace braid::ucxnet
