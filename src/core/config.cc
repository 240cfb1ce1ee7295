#include "core/config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "util/env.h"
#include "util/status.h"

namespace braid {

ncclResult_t loadConfig(const ncclConfig_t* config, CommConfig* out) {
  CommConfig c;
  c.timeoutS = envDouble("BRAID_TIMEOUT_S", 300);
  c.spinIters = static_cast<int>(envInt("BRAID_SPIN", -1));
  c.nslots = static_cast<uint32_t>(envInt("BRAID_NSLOTS", 8));
  c.slotBytes = static_cast<size_t>(envInt("BRAID_SLOT_BYTES", 512 * 1024));
  c.zeroCopyMinBytes =
      static_cast<size_t>(std::max<int64_t>(1, envInt("BRAID_ZERO_COPY_MIN_BYTES", 1 << 20)));
  c.zeroCopyShared = envInt("BRAID_ZERO_COPY_SHARED", 1) != 0;
  c.tcpSockets = static_cast<int>(envInt("BRAID_TCP_SOCKETS", envInt("NCCL_NSOCKS_PERTHREAD", 2)));
  c.tcpBufferBytes = static_cast<int>(envInt("BRAID_TCP_BUFFER", 4 << 20));
  const int64_t inlineBytes = envInt("BRAID_TCP_INLINE_BYTES", 512 << 10);
  if (inlineBytes < 0 || inlineBytes > (int64_t{1} << 30))
    return fail(ncclInvalidArgument, "BRAID_TCP_INLINE_BYTES=%lld: must be in [0, 1073741824]",
                static_cast<long long>(inlineBytes));
  c.tcpInlineBytes = static_cast<size_t>(inlineBytes);
  c.adaptCalls = static_cast<uint32_t>(
      std::clamp<int64_t>(envInt("BRAID_TUNER_ADAPT", 2048), 0, int64_t{1} << 30));
  c.algo = envString("NCCL_ALGO", "");
  c.proto = envString("NCCL_PROTO", "");
  c.netName = envString("NCCL_NET", "");
  const std::string connect = envString("BRAID_CONNECT", "auto");
  if (connect != "auto" && connect != "all" && connect != "neighbours")
    return fail(ncclInvalidArgument, "BRAID_CONNECT=%s: must be auto, all or neighbours",
                connect.c_str());
  c.connect = connect == "all"          ? CommConfig::Connect::kAll
              : connect == "neighbours" ? CommConfig::Connect::kNeighbours
                                        : CommConfig::Connect::kAuto;
  const int64_t allMax = envInt("BRAID_CONNECT_ALL_MAX_RANKS", kEagerConnectRanks);
  if (allMax < 1 || allMax > (1 << 24))
    return fail(ncclInvalidArgument, "BRAID_CONNECT_ALL_MAX_RANKS=%lld: must be in [1, 16777216]",
                static_cast<long long>(allMax));
  c.connectAllMaxRanks = static_cast<int>(allMax);
  const std::string ringOrder = envString("BRAID_RING_ORDER", "host");
  if (ringOrder != "host" && ringOrder != "rank")
    return fail(ncclInvalidArgument, "BRAID_RING_ORDER=%s: must be host or rank",
                ringOrder.c_str());
  c.ringByHost = ringOrder == "host";
  const int64_t rings = envInt("BRAID_RINGS", 2);
  if (rings < 1 || rings > 2)
    return fail(ncclInvalidArgument, "BRAID_RINGS=%lld: must be 1 or 2",
                static_cast<long long>(rings));
  c.rings = static_cast<int>(rings);
  std::string list = envString("BRAID_TRANSPORTS", "");
  std::stringstream ss(list);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) c.transports.push_back(t);
  if (envInt("NCCL_SHM_DISABLE", 0) == 1) {
    if (c.transports.empty()) c.transports = {"local", "p2p", "tcp"};
    std::erase(c.transports, std::string("shm"));
  }
  const int64_t recorder = envInt("BRAID_FLIGHT_RECORDER_SIZE", 64);
  if (recorder < 0 || recorder > (1 << 20))
    return fail(ncclInvalidArgument, "BRAID_FLIGHT_RECORDER_SIZE=%lld: must be in [0, 1048576]",
                static_cast<long long>(recorder));
  c.flightRecorderSize = static_cast<size_t>(recorder);
  c.sigusr1Dump = envInt("BRAID_SIGUSR1_DUMP", 0) == 1;
  if (!std::isfinite(c.timeoutS) || c.timeoutS < 0)
    return fail(ncclInvalidArgument, "BRAID_TIMEOUT_S=%g: must be >= 0 (0: no deadline)",
                c.timeoutS);
  if (c.nslots < 2 || c.nslots > 64)
    return fail(ncclInvalidArgument, "BRAID_NSLOTS=%u: must be in [2, 64]", c.nslots);
  if (c.slotBytes < 4096 || c.slotBytes > (64u << 20) || c.slotBytes % 64 != 0)
    return fail(ncclInvalidArgument,
                "BRAID_SLOT_BYTES=%zu: must be a multiple of 64 in [4 KiB, 64 MiB]", c.slotBytes);
  if (config) {
    if (config->magic != 0xcafebeef)
      return fail(ncclInvalidArgument,
                  "config: magic 0x%x is not NCCL_CONFIG_INITIALIZER's (initialise it first)",
                  config->magic);
    if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(int))
      return fail(ncclInvalidArgument, "config: size %zu too small", config->size);
    if (config->blocking != NCCL_CONFIG_UNDEF_INT) {
      if (config->blocking != 0 && config->blocking != 1)
        return fail(ncclInvalidArgument, "config->blocking=%d: must be 0 or 1", config->blocking);
      c.blocking = config->blocking;
    }
    if (config->commName) c.commName = config->commName;
    if (config->size >= offsetof(ncclConfig_t, netName) + sizeof(config->netName) &&
        config->netName)
      c.netName = config->netName;
  }
  *out = c;
  return ncclSuccess;
}

std::shared_ptr<OwnedConfig> ownConfig(const ncclConfig_t* config) {
  auto owned = std::make_shared<OwnedConfig>();
  owned->config = NCCL_CONFIG_INITIALIZER;
  if (!config) return owned;
  owned->present = true;
  // An older caller's struct may be shorter: copy what it has, the rest stays at the defaults.
  memcpy(&owned->config, config, std::min(config->size, sizeof(ncclConfig_t)));
  if (config->commName) {
    owned->commName = config->commName;
    owned->config.commName = owned->commName.c_str();
  }
  if (owned->config.netName) {
    owned->netName = config->netName;
    owned->config.netName = owned->netName.c_str();
  }
  return owned;
}

}  // namespace braid
