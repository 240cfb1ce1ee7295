// The executor: every plan (plan.h) the API builds goes through submit(), and every plan runs
// through execute(). Where a plan waits before it runs is a queue of the executor, chosen in one
// place:
//   - inside ncclGroupStart/End: the group (group.h), until the outermost ncclGroupEnd;
//   - a Braid host stream: that stream's thread, in order (core/host_stream.h);
//   - device buffers: the CUDA stream, as a host step in stream order (device_queue.h);
//   - a non-blocking communicator: its lane (core/lane.h), the call returning ncclInProgress;
//   - otherwise: now, on the calling thread, in the communicator's issue order.
// A new kind of work (a GPU kernel launch, a hierarchical schedule) is a new Plan kind or Target
// here, not a new way out of the API.
#pragma once

#include "exec/plan.h"
#include "nccl.h"

namespace braid {

/// Runs `plan` now or queues it (see above). Checks its placement first (device_queue.h: place),
/// so a bad buffer or stream fails the call itself.
ncclResult_t submit(Plan plan);

/// Runs `plan` to completion on this thread: the one place where a plan meets the tuner, the
/// fingerprint, the flight recorder and the mismatch watch, and where its failure becomes the
/// communicator's error.
ncclResult_t execute(Plan& plan);

/// Queues `plan` on its communicator's lane, counted as the communicator's pending work
/// (ncclCommGetAsyncError reads ncclInProgress until it has run); returns ncclInProgress.
ncclResult_t submitToLane(Plan plan);

/// The cost model's estimate of `plan` in microseconds (ncclGroupSimulateEnd); false for a plan
/// that cannot be simulated (communicator management).
bool estimateUs(const Plan& plan, double* us);

}  // namespace braid
