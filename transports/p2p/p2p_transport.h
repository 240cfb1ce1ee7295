// The P2P transport: device-buffer traffic between GPUs of one host. It rides on a connection
// the host transports made between ranks that share memory (same process, or shm): the FIFO's
// control words stay in that host memory, and the FIFO gets a second set of slots in GPU memory
// of the receiving rank. A call on device buffers writes and reads those slots with device
// copies and reduction kernels, so its data never crosses to the host.
//
// The receiver allocates the slots; the sender reaches them through the pointer itself when the
// two ranks are threads of one process (with peer access enabled between their devices), or
// through a CUDA IPC handle when they are processes. Both travel in a connect blob through the
// bootstrap, beside the host transport's own. Several ranks may share one GPU (NVIDIA's NCCL
// refuses that), so one GPU can run multi-rank collectives.
#pragma once

#include "transports/transport.h"

namespace braid {

/// Fills the device fields of this rank's PeerInfo for its CUDA device (-1: none).
void describeDevice(int device, PeerInfo* info);

/// Whether rank ctx.rank and `peer` get device slots: both have a device with an identity, on
/// one host, the same device or each able to reach the other's, "p2p" allowed by
/// BRAID_TRANSPORTS / NCCL_P2P_DISABLE, and the host connection shares memory. Symmetric: both
/// ranks decide from the same PeerInfos.
bool p2pCanConnect(const TransportContext& ctx, int peer);
/// True when every pair of the communicator's ranks can (the same answer on every rank); with
/// one rank, when that rank has a device.
bool p2pConnectsAll(const TransportContext& ctx);

/// Receiving side: allocates the device slots for `conn` and describes them in `blob`.
ncclResult_t p2pSetupRecv(const TransportContext& ctx, int peer, RecvConnection& conn,
                          ConnectBlob* blob);
/// Sending side: maps the slots `blob` describes and attaches them to `conn`.
ncclResult_t p2pConnectSend(const TransportContext& ctx, int peer, SendConnection& conn,
                            const ConnectBlob& blob);

}  // namespace braid
