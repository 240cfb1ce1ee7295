#include "core/config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "util/settings.h"
#include "util/status.h"

namespace braid {

ncclResult_t loadConfig(const ncclConfig_t* config, CommConfig* out) {
  CommConfig c;
  // Every variable's type and range first (util/settings_table.h): a bad value fails the
  // communicator's creation naming it, wherever in the library it is read.
  if (std::string problem = checkSettings(); !problem.empty())
    return fail(ncclInvalidArgument, "%s", problem.c_str());
  c.timeoutS = settingDouble(Setting::kTimeoutS);
  c.spinIters = static_cast<int>(settingInt(Setting::kSpin));
  c.nslots = static_cast<uint32_t>(settingInt(Setting::kNslots));
  c.slotBytes = static_cast<size_t>(settingInt(Setting::kSlotBytes));
  if (c.slotBytes % 64 != 0)
    return fail(ncclInvalidArgument, "BRAID_SLOT_BYTES=%zu: must be a multiple of 64", c.slotBytes);
  c.zeroCopyMinBytes =
      static_cast<size_t>(std::max<int64_t>(1, settingInt(Setting::kZeroCopyMinBytes)));
  c.zeroCopyShared = settingInt(Setting::kZeroCopyShared) != 0;
  c.tcpSockets = static_cast<int>(settingIsSet(Setting::kTcpSockets)
                                      ? settingInt(Setting::kTcpSockets)
                                      : settingInt(Setting::kNcclNsocksPerthread));
  c.tcpBufferBytes = static_cast<int>(settingInt(Setting::kTcpBuffer));
  c.tcpInlineBytes = static_cast<size_t>(settingInt(Setting::kTcpInlineBytes));
  c.adaptCalls = static_cast<uint32_t>(settingInt(Setting::kTunerAdapt));
  c.algo = settingText(Setting::kNcclAlgo);
  c.proto = settingText(Setting::kNcclProto);
  c.netName = settingText(Setting::kNcclNet);
  const std::string connect = settingText(Setting::kConnect);
  c.connect = connect == "all"          ? CommConfig::Connect::kAll
              : connect == "neighbours" ? CommConfig::Connect::kNeighbours
                                        : CommConfig::Connect::kAuto;
  c.connectAllMaxRanks = static_cast<int>(settingInt(Setting::kConnectAllMaxRanks));
  c.ringByHost = settingText(Setting::kRingOrder) == "host";
  c.rings = static_cast<int>(settingInt(Setting::kRings));
  std::stringstream ss(settingText(Setting::kTransports));
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) c.transports.push_back(t);
  if (settingInt(Setting::kNcclShmDisable) == 1) {
    if (c.transports.empty()) c.transports = {"local", "p2p", "tcp"};
    std::erase(c.transports, std::string("shm"));
  }
  c.flightRecorderSize = static_cast<size_t>(settingInt(Setting::kFlightRecorderSize));
  c.sigusr1Dump = settingInt(Setting::kSigusr1Dump) == 1;
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
