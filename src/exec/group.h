// ncclGroupStart/End: plans submitted inside a group are held per thread and run at the
// outermost ncclGroupEnd; the sends and receives of one communicator join one batch, so any
// pattern completes without deadlock. At the end, device plans go to their CUDA streams; each
// communicator's other plans run in order, the first communicator's on the calling thread and
// the others' on their lanes, concurrently, so one thread can drive every rank. A group whose
// plans all name one host stream is queued there whole; one that mixes streams runs after the
// host streams it names have drained (the order a CUDA group gives).
#pragma once

#include "exec/plan.h"
#include "nccl.h"

namespace braid {

bool groupActive();
ncclResult_t groupStart();
ncclResult_t groupEnd();
/// Holds `plan` until the outermost group ends (a send/receive plan joins its communicator's
/// batch of this group).
void groupDefer(Plan plan);
/// ncclGroupSimulateEnd: ends the group like groupEnd but runs nothing. The outermost one drops
/// the group's plans and returns their estimated time: communicators run concurrently, so the
/// largest of their sums.
ncclResult_t groupSimulateEnd(double* estimatedUs);

}  // namespace braid
