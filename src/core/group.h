// ncclGroupStart/End: calls made inside a group are collected per thread and run at the outermost
// ncclGroupEnd. Work for a single communicator runs on the calling thread; work spanning several
// communicators runs on their workers concurrently, so one thread can drive every rank.
// Work given a host stream (core/host_stream.h) is queued on it instead; a group whose calls all
// name the same host stream is queued there whole.
#pragma once

#include <cstdint>
#include <functional>

#include "nccl.h"

namespace braid {

class HostStream;

bool groupActive();
/// Identifies the open outermost group (0 when none); unique over the process's lifetime.
uint64_t groupSerial();
ncclResult_t groupStart();
ncclResult_t groupEnd();
/// The cost model's estimate of a deferred task, in microseconds (asked only by a simulated end).
using TaskEstimate = std::function<double()>;
/// Defers `task` (for `comm`, on `stream` or the caller's thread) to the end of the current group.
void groupAdd(ncclComm* comm, std::function<ncclResult_t()> task, HostStream* stream = nullptr,
              TaskEstimate estimate = {});
/// True when runOrDefer would run a task at once on the caller's thread (no group, no host
/// stream, a blocking communicator): the small-message path skips wrapping the call.
bool runsNow(ncclComm* comm, HostStream* stream);
/// Runs `task` now, queues it on `stream` (a host stream), or defers it (inside a group).
ncclResult_t runOrDefer(ncclComm* comm, HostStream* stream, std::function<ncclResult_t()> task,
                        TaskEstimate estimate = {});
/// ncclGroupSimulateEnd: ends the group like groupEnd but runs nothing. The outermost one drops
/// the group's work and returns its estimated time: communicators run concurrently, so the
/// largest of their sums.
ncclResult_t groupSimulateEnd(double* estimatedUs);

}  // namespace braid
