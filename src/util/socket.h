// TCP socket helpers shared by the bootstrap and the TCP transport: interface selection
// (NCCL_SOCKET_IFNAME), listen/connect/accept, and whole-buffer I/O that ends at a deadline.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "util/clock.h"

namespace braid {

/// An IPv4 or IPv6 address with port, small enough to travel inside a unique id.
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  int family() const { return storage.ss_family; }
  uint16_t port() const;
  void setPort(uint16_t port);
  std::string toString() const;
};

/// Address of the interface to use (NCCL_SOCKET_IFNAME: prefix list, "^" excludes, "=" exact;
/// default: the first up interface that is not loopback, else loopback). Port 0.
ncclResult_t findInterfaceAddress(SockAddr* out, std::string* ifName);
/// Every interface NCCL_SOCKET_IFNAME matches, at most `most` (its first address each, in the
/// system's order; without NCCL_SOCKET_IFNAME the one findInterfaceAddress picks): the TCP
/// transport spreads a connection's sockets over them.
ncclResult_t findInterfaceAddresses(std::vector<SockAddr>* out, std::vector<std::string>* names,
                                    size_t most);
/// "host:port", "[v6]:port" or "ip:port" to an address.
ncclResult_t parseHostPort(const std::string& text, SockAddr* out);

/// Binds and listens; addr's port 0 picks one, written back into addr.
ncclResult_t listenOn(SockAddr* addr, int* fd, int backlog = 128);
/// Connects, retrying refused connections until the deadline (the listener may start later).
/// With `refusedIsFinal`, a refusal fails at once: for a port the peer published only after it
/// was listening, a refusal means the peer has gone.
ncclResult_t connectTo(const SockAddr& addr, const Deadline& deadline,
                       const std::atomic<uint32_t>* abort, int* fd, bool refusedIsFinal = false);
/// Accepts one connection on any of `listenFds`; ncclRemoteError on timeout.
ncclResult_t acceptFromAny(const std::vector<int>& listenFds, const Deadline& deadline,
                           const std::atomic<uint32_t>* abort, int* fd);
/// Accepts one connection; ncclRemoteError on timeout.
ncclResult_t acceptFrom(int listenFd, const Deadline& deadline, const std::atomic<uint32_t>* abort,
                        int* fd);

/// Sends/receives exactly len bytes. A closed peer is ncclRemoteError; a timeout too.
ncclResult_t sendAll(int fd, const void* buf, size_t len, const Deadline& deadline,
                     const std::atomic<uint32_t>* abort);
ncclResult_t recvAll(int fd, void* buf, size_t len, const Deadline& deadline,
                     const std::atomic<uint32_t>* abort);

/// TCP_NODELAY, keepalive and (when bytes > 0) large socket buffers.
void tuneSocket(int fd, int bufferBytes);
/// For a socket that only receives data: acknowledge small segments every second one instead of
/// each at once (TCP_QUICKACK off). The kernel turns this off again after a pause in the
/// traffic (a delayed ACK's timer fired), so a reader sets it again now and then. No effect on
/// other sockets.
void preferDelayedAcks(int fd);
void closeFd(int& fd);

}  // namespace braid
