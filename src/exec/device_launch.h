// Collectives and point-to-point on device buffers as one kernel launch on the user's stream
// (Target::kDeviceKernel):
// the blocks of every rank run the schedule themselves over the communicator's kernel FIFOs
// (core/device_channels.h); no host thread takes part and nothing waits on the host.
#pragma once

#include "exec/plan.h"
#include "nccl.h"

namespace braid {

/// Whether `plan` (a collective, or a batch of sends and receives, on device buffers) can run as
/// a kernel: the communicator set up its kernel FIFOs, and a batch fits one launch
/// (kernels::device::kMaxP2pItems transfers).
bool kernelRuns(const Plan& plan);

/// Turns a launch of `comm` that gave up into the communicator's error (ncclSystemError with
/// the reason); returns the communicator's state.
ncclResult_t noteKernelFailures(ncclComm* comm);

/// Enqueues the launch on plan.stream, behind this communicator's previous launch (unless the
/// stream is capturing a graph, whose replays the user orders) and returns.
ncclResult_t launchKernel(Plan& plan);
/// The same for a batch of sends and receives (a group's, an all-to-all's, a gather's or a
/// scatter's): one launch, a block group per (peer, direction) (kernels/device/p2p.h).
ncclResult_t launchSendRecv(Plan& plan);

/// Whether two kernel plans can share one launch: one communicator, stream (and capture), data
/// type and op (the kernel is compiled per type and op).
bool sameLaunch(const Plan& a, const Plan& b);
/// One launch for `count` (1 to kernels::device::kMaxLaunchItems) plans that sameLaunch
/// pairs, run one after another by every block: a group's collectives.
ncclResult_t launchKernels(Plan* const* plans, int count);

}  // namespace braid
