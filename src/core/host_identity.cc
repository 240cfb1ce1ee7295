#include "core/host_identity.h"

#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "transports/liveness.h"
#include "util/settings.h"

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
  std::string host = settingText(Setting::kNcclHostId);
  if (host.empty())
    host = std::string(info.hostname) + "|" + readFirstLine("/proc/sys/kernel/random/boot_id");
  info.hostHash = fnv1a(host + "|" + netNamespace());
  info.pidStartTime = processStartTime(info.pid);
  info.processHash =
      fnv1a(std::to_string(info.pid) + "|" + std::to_string(info.pidStartTime), info.hostHash);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int cpu = 0; cpu < 1024 && cpu < CPU_SETSIZE; cpu++)
      if (CPU_ISSET(cpu, &set)) info.cpus[cpu / 64] |= uint64_t(1) << (cpu % 64);
  return info;
}

int hostCores(const std::vector<PeerInfo>& peers, int rank) {
  uint64_t all[16] = {};
  for (const PeerInfo& p : peers)
    if (p.hostHash == peers[rank].hostHash)
      for (int i = 0; i < 16; i++) all[i] |= p.cpus[i];
  int cores = 0;
  for (uint64_t word : all) cores += __builtin_popcountll(word);
  if (cores > 0) return cores;
  long online = sysconf(_SC_NPROCESSORS_ONLN);  // no mask was readable
  return online > 0 ? static_cast<int>(online) : 1;
}

}  // namespace braid
