// ncclGroupStart/End: calls made inside a group are collected per thread and run at the outermost
// ncclGroupEnd. Work for a single communicator runs on the calling thread; work spanning several
// communicators runs on their workers concurrently, so one thread can drive every rank.
#pragma once

#include <functional>

#include "nccl.h"

namespace braid {

bool groupActive();
ncclResult_t groupStart();
ncclResult_t groupEnd();
/// Defers `task` (for `comm`) to the end of the current group.
void groupAdd(ncclComm* comm, std::function<ncclResult_t()> task);
/// Runs `task` now (outside a group) or defers it (inside one).
ncclResult_t runOrDefer(ncclComm* comm, std::function<ncclResult_t()> task);

}  // namespace braid
