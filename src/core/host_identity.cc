#include "core/host_identity.h"

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "transports/liveness.h"
#include "util/env.h"

namespace braid {
namespace {

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string readFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string netNamespace() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/ns/net", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  buf[n] = 0;
  return buf;
}

}  // namespace

PeerInfo localPeerInfo(int rank) {
  PeerInfo info;
  info.rank = rank;
  info.pid = getpid();
  gethostname(info.hostname, sizeof(info.hostname) - 1);
  std::string host = envString("NCCL_HOSTID", "");
  if (host.empty())
    host = std::string(info.hostname) + "|" + readFirstLine("/proc/sys/kernel/random/boot_id");
  info.hostHash = fnv1a(host + "|" + netNamespace());
  info.pidStartTime = processStartTime(info.pid);
  info.processHash =
      fnv1a(std::to_string(info.pid) + "|" + std::to_string(info.pidStartTime), info.hostHash);
  return info;
}

}  // namespace braid
