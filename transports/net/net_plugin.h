// One network of a net plugin (net_plugin_api.h), whichever interface version the library
// exports, behind one set of calls shaped like the newest: the transport (net_transport.cc)
// speaks to this and never to a versioned struct. Calls pass straight through; only argument
// shapes differ between versions (int or size_t sizes, the profiler handle, the comm config,
// v11's context).
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"
#include "transports/net/net_plugin_api.h"

namespace braid {

/// What Braid uses of a device's properties.
struct NetDeviceProperties {
  std::string name;
  int ptrSupport = 0;
  int speedMbps = 0;
  int maxRecvs = 1;
  size_t maxMessageBytes = 0;  ///< largest message isend/irecv take (v8: INT_MAX)
};

class NetPlugin {
 public:
  /// `table` is the library's ncclNetPlugin_v<version> (8 to 11); `path` names the library.
  NetPlugin(int version, const void* table, std::string path);

  int version() const { return version_; }
  /// The network's name as the plugin gives it (what NCCL_NET matches, case-insensitively).
  const char* name() const;
  const std::string& path() const { return path_; }

  /// Once per process (v11: one context for every communicator of the process).
  ncclResult_t init(ncclDebugLogger_t logger);
  ncclResult_t devices(int* ndev);
  ncclResult_t properties(int dev, NetDeviceProperties* props);
  ncclResult_t listen(int dev, void* handle, void** listenComm);
  /// Non-blocking: *sendComm stays null until connected.
  ncclResult_t connect(int dev, void* handle, void** sendComm);
  /// Non-blocking: *recvComm stays null until accepted.
  ncclResult_t accept(void* listenComm, void** recvComm);
  ncclResult_t regMr(void* comm, void* data, size_t size, void** mhandle);
  ncclResult_t deregMr(void* comm, void* mhandle);
  /// *request null: the plugin cannot take it now; try again later.
  ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                     void** request);
  ncclResult_t irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle,
                     void** request);
  ncclResult_t test(void* request, int* done, int* size);
  ncclResult_t closeSend(void* sendComm);
  ncclResult_t closeRecv(void* recvComm);
  ncclResult_t closeListen(void* listenComm);

 private:
  int version_;
  const void* table_;
  std::string path_;
  void* context_ = nullptr;  ///< v11's per-communicator context (one per process here)
  ncclNetCommConfig_v10_t config_{NCCL_NET_TRAFFIC_CLASS_UNDEF};
};

}  // namespace braid
