// The UCX plugin's rendezvous socket (ucx_net.h): how two communicators find each other before
// UCX takes over. NCCL_SOCKET_IFNAME chooses the interface as NCCL does; the exchange is two small
// length-prefixed messages (each side's UCX worker address).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace braid::ucxnet {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string ifname;
  std::string text() const;
};

/// The interface NCCL_SOCKET_IFNAME picks (prefixes, '^' excludes, '=' exact), else the first
/// non-loopback interface that is up, else loopback; port 0.
bool chooseEndpoint(Endpoint* out);
/// A listening, non-blocking TCP socket on `ep` (its port filled in); -1 on failure.
int listenOn(Endpoint* ep);
/// Starts a non-blocking connect; -1 on failure.
int startConnect(const Endpoint& to);
/// 1 connected, 0 not yet, -1 failed (errno set).
int connectDone(int fd);
/// Sends or receives all of a length-prefixed message within `seconds`; false on failure.
bool sendMessage(int fd, const void* data, uint32_t len, double seconds);
bool recvMessage(int fd, std::vector<char>* out, uint32_t maxLen, double seconds);
/// True when `fd` has bytes to read now.
bool readable(int fd);

}  // namespace braid::ucxnet
