// The P2P transport: device-buffer traffic between GPUs of one host. It is registered first
// (transport_registry.cc) and rides on the connection of the host transport the pair would use
// otherwise, where that shares memory (same process, or shm): the FIFO's control words stay in
// that host memory, and the FIFO gets a second set of slots in GPU memory of the receiving rank. A
// call on device buffers writes and reads those slots with device copies and reduction kernels, so
// its data never crosses to the host.
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

/// True when every pair of the communicator's ranks connects through the P2P transport (the
/// same answer on every rank, from the peer table alone); with one rank, when that rank has a
/// device. Calls on device buffers then move their data on the GPUs.
bool p2pConnectsAll(const TransportContext& ctx);

}  // namespace braid
