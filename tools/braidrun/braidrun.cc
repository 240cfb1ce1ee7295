// braidrun: a local launcher with torchrun's environment, so that Braid programs (and PyTorch
// scripts) can start N ranks on one machine without MPI.
//
//   braidrun -n 4 build/bench/all_reduce_perf -b 8 -e 64M -f 2
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "launch_options.h"
#include "rank_supervisor.h"

extern char** environ;

namespace braidrun {
namespace {

// Binds port 0 on loopback and returns the port the kernel chose. The socket is closed before
// the ranks start, so rank 0 can bind it; another process taking it in between is unlikely.
int pickFreePort(std::string* error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    *error = std::string("cannot find a free port: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

// 16 random bytes as 32 lowercase hex characters; empty on failure.
std::string makeSecret(std::string* error) {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("/dev/urandom: ") + std::strerror(errno);
    return {};
  }
  unsigned char bytes[16];
  std::size_t have = 0;
  while (have < sizeof(bytes)) {
    ssize_t got = ::read(fd, bytes + have, sizeof(bytes) - have);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      *error = "short read from /dev/urandom";
      ::close(fd);
      return {};
    }
    have += static_cast<std::size_t>(got);
  }
  ::close(fd);
  static const char kHex[] = "0123456789abcdef";
  std::string secret;
  for (unsigned char byte : bytes) {
    secret += kHex[byte >> 4];
    secret += kHex[byte & 15];
  }
  return secret;
}

int run(int argc, char** argv) {
  LaunchOptions options;
  std::string error;
  switch (parseLaunchOptions(argc, argv, &options, &error)) {
    case ParseStatus::kHelp:
      std::fputs(usageText(argv[0]).c_str(), stdout);
      return 0;
    case ParseStatus::kError:
      std::fprintf(stderr, "braidrun: %s\n%s", error.c_str(), usageText(argv[0]).c_str());
      return 2;
    case ParseStatus::kRun:
      break;
  }
  Rendezvous rendezvous;
  rendezvous.masterPort = options.masterPort != 0 ? options.masterPort : pickFreePort(&error);
  if (rendezvous.masterPort < 0) {
    std::fprintf(stderr, "braidrun: %s\n", error.c_str());
    return 1;
  }
  rendezvous.secret = makeSecret(&error);
  if (rendezvous.secret.empty()) {
    std::fprintf(stderr, "braidrun: %s\n", error.c_str());
    return 1;
  }
  std::fflush(stdout);
  return superviseRanks(options, rendezvous, environ);
}

}  // namespace
}  // namespace braidrun

int main(int argc, char** argv) {
  return braidrun::run(argc, argv);
}
