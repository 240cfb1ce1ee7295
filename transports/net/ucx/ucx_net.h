// The UCX network behind libnccl-net-ucx.so (ucx_plugin.cc exports it as ncclNetPlugin_v8..v11):
// NCCL's net-plugin calls over UCX's tag-matching API (UCP). It depends on nothing of Braid's but
// the interface header, so the library also loads into NVIDIA's NCCL.
//
// - One UCP context per process (features: tags), created by the first init, released by the
//   last finalize. UCX picks its transports as configured (UCX_TLS, UCX_NET_DEVICES): verbs
//   (RC, DC, UD) on InfiniBand and RoCE, TCP elsewhere.
// - A UCP worker per send or receive communicator, so that different communicators may be
//   driven by different threads with no shared lock: NCCL and Braid call one communicator from
//   one thread at a time. One plugin thread progresses the communicators whose sends completed
//   until those bytes have left (over TCP a completed send may still wait in UCX's endpoint:
//   ucx_flusher.h); a communicator's lock keeps it and the caller apart.
// - Connecting: listen() opens a TCP socket (on NCCL_SOCKET_IFNAME's interface, as NCCL's own
//   networks choose it) whose address and a random id make the handle; connect() and accept()
//   are non-blocking state machines that exchange the two workers' addresses over that socket,
//   then each side creates an endpoint to the other's worker with peer error handling, so a
//   peer that dies fails the requests instead of leaving them pending.
// - Data: tagged sends and receives (the 64-bit tag holds the connection's id and NCCL's tag),
//   always completed through test(), which progresses the worker.
//
// Files: ucx_context.cc (init, finalize, properties), ucx_comm.cc (a comm: worker, endpoint,
// requests, closing), ucx_connect.cc (listen, connect, accept), ucx_data.cc (registrations,
// isend, irecv, test), ucx_flusher.cc (completed sends' bytes out), ucx_socket.cc (the rendezvous
// socket), ucx_plugin.cc (the exports).
#pragma once

#include <cstddef>
#include <cstdint>

#include "transports/net/net_plugin_api.h"

namespace braid::ucxnet {

/// What getProperties reports, in the newest layout (ucx_plugin.cc narrows it per version).
void properties(ncclNetProperties_v11_t* props);

ncclResult_t init(ncclDebugLogger_t logger);
ncclResult_t finalize();
ncclResult_t devices(int* ndev);
ncclResult_t listen(int dev, void* handle, void** listenComm);
ncclResult_t connect(int dev, void* handle, void** sendComm);
ncclResult_t accept(void* listenComm, void** recvComm);
ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t deregMr(void* comm, void* mhandle);
ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void** request);
ncclResult_t irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags,
                   void** request);
ncclResult_t test(void* request, int* done, int* sizes);
ncclResult_t closeSend(void* sendComm);
ncclResult_t closeRecv(void* recvComm);
ncclResult_t closeListen(void* listenComm);

}  // namespace braid::ucxnet
