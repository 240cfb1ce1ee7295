// Plans on device buffers, and the issue order every plan of a communicator keeps.
//
// Where every pair of ranks is connected by the P2P transport (Team::overP2p), a device plan is
// one host step enqueued on the user's CUDA stream: a host thread, in stream order, runs the
// plan with its copies and reductions on the GPU (Target::kDeviceP2p). Over the host transports
// (shared memory, TCP) it is three steps (Target::kDeviceStaged):
//   1. copy the device inputs into page-locked host staging,
//   2. run the plan on the staged copies (a host thread, in stream order),
//   3. copy the staged outputs back to the device buffers.
// Either way the call is asynchronous to the host exactly as an NCCL call is
// (cudaStreamSynchronize completes it), and a failure becomes the communicator's error.
#pragma once

#include <functional>

#include "exec/plan.h"
#include "nccl.h"

namespace braid {

/// Sets plan.target from where its buffers live, and rejects what cannot run: host and device
/// buffers mixed, memory or a stream of another device, a host stream with device buffers,
/// CUDA-graph capture. Errors name the argument and its value.
ncclResult_t place(Plan& plan);

/// Enqueues a device plan (target kDeviceP2p or kDeviceStaged) on its CUDA stream and returns.
ncclResult_t enqueueOnDevice(Plan plan);

/// Runs `task` on this thread in the communicator's issue order: when device plans are still
/// queued on streams, it waits until their host steps have run (NCCL runs a communicator's
/// operations in the order they were issued, whatever streams they name).
ncclResult_t runInTurn(ncclComm* comm, const std::function<ncclResult_t()>& task);

}  // namespace braid
