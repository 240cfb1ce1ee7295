// init/finalize (the UCP context's reference count), devices and properties.
#include "transports/net/ucx/ucx_context.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>

#include "transports/net/ucx/ucx_flusher.h"
#include "transports/net/ucx/ucx_net.h"

namespace braid::ucxnet {
namespace {

std::mutex initMutex;
int initCount = 0;  // inits not yet finalized

// The link speed Linux reports (Mbit/s); virtual interfaces (loopback, veth) have none.
int readSpeed(const std::string& ifname) {
  std::ifstream in("/sys/class/net/" + ifname + "/speed");
  int mbps = 0;
  return (in >> mbps) && mbps > 0 ? mbps : 10000;
}

const char* envOr(const char* name, const char* otherwise) {
  const char* v = getenv(name);
  return v && *v ? v : otherwise;
}

}  // namespace

Global& global() {
  static Global g;
  return g;
}

ncclResult_t init(ncclDebugLogger_t logger) {
  std::lock_guard<std::mutex> lock(initMutex);
  Global& g = global();
  // The first logger stays: NCCL passes the same one to every init, and comms may be logging.
  if (logger && !g.logger) g.logger = logger;
  if (initCount > 0) {
    initCount++;
    return ncclSuccess;
  }
  if (!chooseEndpoint(&g.endpoint)) {
    UCX_WARN("no interface matches NCCL_SOCKET_IFNAME=%s", envOr("NCCL_SOCKET_IFNAME", ""));
    return ncclSystemError;
  }
  g.speedMbps = readSpeed(g.endpoint.ifname);
  g.deviceName = g.endpoint.ifname;
  // UCX_* variables (UCX_TLS, UCX_NET_DEVICES, ...) are read here, as by any UCX program.
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    UCX_WARN("ucp_config_read: %s", ucs_status_string(s));
    return ncclSystemError;
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  const ucs_status_t s = ucp_init(&params, config, &g.context);
  ucp_config_release(config);
  if (s != UCS_OK) {
    UCX_WARN("ucp_init: %s (UCX_TLS=%s)", ucs_status_string(s), envOr("UCX_TLS", "default"));
    return ncclSystemError;
  }
  initCount = 1;
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  UCX_INFO("UCX %u.%u.%u, UCX_TLS=%s, rendezvous sockets on %s (%s)", major, minor, release,
           envOr("UCX_TLS", "(UCX's default)"), g.endpoint.ifname.c_str(),
           g.endpoint.text().c_str());
  return ncclSuccess;
}

// The caller closes its comms first (NCCL does): their workers belong to this context.
ncclResult_t finalize() {
  std::lock_guard<std::mutex> lock(initMutex);
  if (initCount > 0 && --initCount == 0) {
    stopFlusher();
    ucp_cleanup(global().context);
    global().context = nullptr;
  }
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = 1;  // UCX spreads over the NICs itself (UCX_NET_DEVICES): one device to NCCL
  return ncclSuccess;
}

void properties(ncclNetProperties_v11_t* p) {
  memset(p, 0, sizeof(*p));
  p->name = const_cast<char*>(global().deviceName.c_str());
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = global().speedMbps;
  p->latency = 0;
  p->maxComms = 1 << 20;  // a worker per comm: bounded by memory and file descriptors only
  p->maxRecvs = 1;        // irecv takes one buffer
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = 0;
  p->maxP2pBytes = p->maxCollBytes = size_t(1) << 40;  // NCCL_MAX_NET_SIZE_BYTES: no limit of ours
  p->maxMultiRequestSize = 1;
}

}  // namespace braid::ucxnet
