// The UCX plugin's process-wide state: one UCP context (created by the first init, released by
// the last finalize: NCCL initialises v8..v10 once per process, v11 once per communicator), the
// logger NCCL passed, and the interface that listen() uses. Everything else belongs to a comm.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

#include "transports/net/net_plugin_api.h"
#include "transports/net/ucx/ucx_socket.h"

namespace braid::ucxnet {

struct Global {
  ucp_context_h context = nullptr;
  ncclDebugLogger_t logger = nullptr;
  Endpoint endpoint;  // where listen() opens its rendezvous sockets
  int speedMbps = 10000;
  std::string deviceName = "ucx";  // what getProperties names: the rendezvous interface
};
/// Set up by init() before any comm exists, so comms read it without a lock.
Global& global();

#define UCX_LOG(level, ...)                                                            \
  do {                                                                                 \
    if (::braid::ucxnet::global().logger)                                              \
      ::braid::ucxnet::global().logger(level, NCCL_LOG_SUBSYS_NET, __FILE__, __LINE__, \
                                       "NET/UCX " __VA_ARGS__);                        \
  } while (0)
#define UCX_WARN(...) UCX_LOG(NCCL_LOG_WARN, __VA_ARGS__)
#define UCX_INFO(...) UCX_LOG(NCCL_LOG_INFO, __VA_ARGS__)

}  // namespace braid::ucxnet
