// Collectives on device buffers as one kernel launch on the user's stream (Target::kDeviceKernel):
// the blocks of every rank run the schedule themselves over the communicator's kernel FIFOs
// (core/device_channels.h); no host thread takes part and nothing waits on the host.
#pragma once

#include "exec/plan.h"
#include "nccl.h"

namespace braid {

/// Whether `plan` (a collective on device buffers) can run as a collective kernel: the
/// communicator set up its kernel FIFOs and the call needs nothing read on the host in stream
/// order (a premulsum scalar in device memory does).
bool kernelRuns(const Plan& plan);

/// Turns a launch of `comm` that gave up into the communicator's error (ncclSystemError with
/// the reason); returns the communicator's state.
ncclResult_t noteKernelFailures(ncclComm* comm);

/// Enqueues the launch on plan.stream, behind this communicator's previous launch (unless the
/// stream is capturing a graph, whose replays the user orders) and returns.
ncclResult_t launchKernel(Plan& plan);

/// Whether two kernel plans can share one launch: one communicator, stream (and capture), data
/// type and op (the kernel is compiled per type and op).
bool sameLaunch(const Plan& a, const Plan& b);
/// One launch for `count` (1 to kernels::device::kMaxLaunchItems) plans that sameLaunch
/// pairs, run one after another by every block: a group's collectives.
ncclResult_t launchKernels(Plan* const* plans, int count);

}  // namespace braid
