// Communicator lifetime: unique ids, init, finalize, destroy, abort, and the queries.
#include <unistd.h>
#include <chrono>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "api/api.h"
#include "comm/shrink.h"
#include "comm/split.h"
#include "core/unique_id.h"
#include "device/device_runtime.h"
#include "exec/device_launch.h"
#include "exec/executor.h"
#include "exec/group.h"
#include "util/log.h"
#include "util/random.h"

using namespace braid;

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  return apiGuard("ncclGetVersion", [&] {
    if (!version) return fail(ncclInvalidArgument, "version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return apiGuard("ncclGetUniqueId", [&] {
    if (!uniqueId) return fail(ncclInvalidArgument, "uniqueId is NULL");
    ncclResult_t envResult;
    if (uniqueIdFromEnvironment(uniqueId, &envResult)) return envResult;
    // Otherwise this process hosts the root on its own interface, with a fresh secret.
    return newHostedUniqueId(uniqueId);
  });
}

namespace {

// A communicator-management call's work after its checks, as a plan: deferred inside a group,
// queued on a non-blocking communicator's lane, run now otherwise.
ncclResult_t submitManagement(ncclComm* comm, std::function<ncclResult_t()> body) {
  Plan plan;
  plan.kind = Plan::Kind::kManagement;
  plan.comm = comm;
  plan.manage = std::move(body);
  return submit(std::move(plan));
}

// ncclCommShrink's list: in range, no repeats, not everyone, and not the caller (excluded ranks
// do not call). Returns it sorted.
ncclResult_t checkExcludeList(const ncclComm* comm, const int* list, int count,
                              std::vector<int>* sorted) {
  if (count < 1)
    return fail(ncclInvalidArgument,
                "excludeRanksCount=%d: must be at least 1 (to copy a communicator, use "
                "ncclCommSplit)",
                count);
  if (!list)
    return fail(ncclInvalidArgument, "excludeRanksList is NULL with excludeRanksCount=%d", count);
  if (count > comm->nranks())
    return fail(ncclInvalidArgument, "excludeRanksCount=%d exceeds nranks=%d", count,
                comm->nranks());
  for (int i = 0; i < count; i++)
    if (list[i] < 0 || list[i] >= comm->nranks())
      return fail(ncclInvalidArgument, "excludeRanksList[%d]=%d is outside [0, nranks=%d)", i,
                  list[i], comm->nranks());
  sorted->assign(list, list + count);
  std::sort(sorted->begin(), sorted->end());
  if (auto dup = std::adjacent_find(sorted->begin(), sorted->end()); dup != sorted->end())
    return fail(ncclInvalidArgument, "excludeRanksList names rank %d more than once", *dup);
  if (count == comm->nranks())
    return fail(ncclInvalidArgument,
                "excludeRanksList excludes all %d ranks: no rank would be left", count);
  if (std::binary_search(sorted->begin(), sorted->end(), comm->rank()))
    return fail(ncclInvalidArgument,
                "excludeRanksList contains the calling rank %d: excluded ranks must not call "
                "ncclCommShrink",
                comm->rank());
  return ncclSuccess;
}

ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                      ncclConfig_t* config) {
  if (!out) return fail(ncclInvalidArgument, "comm (the output pointer) is NULL");
  *out = nullptr;
  if (nranks < 1) return fail(ncclInvalidArgument, "nranks=%d: must be at least 1", nranks);
  if (rank < 0 || rank >= nranks)
    return fail(ncclInvalidArgument, "rank=%d is outside [0, nranks=%d)", rank, nranks);
  UniqueIdFields f;
  SockAddr addr;
  BRAID_TRY(unpackUniqueId(id, &f, &addr));
  CommConfig checked;
  BRAID_TRY(loadConfig(config, &checked));  // bad fields fail now, before anything exists
  ncclComm* comm = commAllocate();
  comm->device.cudaDevice = initDevice();  // as NCCL: the device current when the call is made
  comm->config = checked;                  // blocking or not decides where the plan runs
  *out = comm;
  // A non-blocking init runs on the lane after this call returned: the caller's config may be
  // gone by then, so the plan owns a copy.
  auto owned = ownConfig(config);
  const bool deferred = groupActive() || checked.blocking == 0;
  ncclResult_t r = submitManagement(comm, [comm, nranks, id, rank, owned] {
    ncclResult_t r = commInit(comm, id, nranks, rank, owned->get());
    if (r != ncclSuccess) comm->health.setError(r, lastError());
    return r;
  });
  if (r != ncclSuccess && r != ncclInProgress && !deferred) {
    commFree(comm);
    *out = nullptr;
  }
  return r;
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  return apiGuard("ncclCommInitRank",
                  [&] { return initRank(comm, nranks, commId, rank, nullptr); });
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  return apiGuard("ncclCommInitRankConfig",
                  [&] { return initRank(comm, nranks, commId, rank, config); });
}

// NCCL spreads the rendezvous over nId roots; Braid's root serves a whole communicator, so every
// rank joins through the first id (all ranks receive the same array, as NCCL requires).
NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiGuard("ncclCommInitRankScalable", [&] {
    if (nId < 1) return fail(ncclInvalidArgument, "nId=%d: must be at least 1", nId);
    if (!commIds) return fail(ncclInvalidArgument, "commIds is NULL");
    return initRank(newcomm, nranks, commIds[0], myrank, config);
  });
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return apiGuard("ncclCommInitAll", [&]() -> ncclResult_t {
    if (!comms) return fail(ncclInvalidArgument, "comm (the output array) is NULL");
    if (ndev < 1) return fail(ncclInvalidArgument, "ndev=%d: must be at least 1", ndev);
    // With CUDA devices, rank i's device is devlist[i] (or i), as in NCCL; Braid also accepts
    // one device for several ranks. Without devices the list is not used.
    const int devices = deviceRuntime().deviceCount();
    if (devices > 0 && devlist)
      for (int i = 0; i < ndev; i++)
        if (devlist[i] < 0 || devlist[i] >= devices)
          return fail(ncclInvalidArgument, "devlist[%d]=%d: no such CUDA device (%d present)", i,
                      devlist[i], devices);
    ncclUniqueId id;
    BRAID_TRY(newHostedUniqueId(&id));  // never NCCL_COMM_ID's: that one names the job's root
    groupStart();
    for (int i = 0; i < ndev; i++) {
      ncclResult_t r = initRank(&comms[i], ndev, id, i, nullptr);
      if (r != ncclSuccess) {
        groupEnd();
        return r;
      }
      // Rank i's device, known before the group connects the ranks (the P2P transport needs it).
      if (devices > 0) comms[i]->device.cudaDevice = devlist ? devlist[i] : i % devices;
    }
    ncclResult_t r = groupEnd();
    if (r != ncclSuccess) {
      for (int i = 0; i < ndev; i++)
        if (comms[i]) commRelease(comms[i], true), comms[i] = nullptr;
      return r;
    }
    return r;
  });
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  return apiGuard("ncclCommSplit", [&] {
    BRAID_TRY(checkComm(comm));
    if (!newcomm) return fail(ncclInvalidArgument, "newcomm (the output pointer) is NULL");
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
      return fail(ncclInvalidArgument, "color=%d: must be >= 0 or NCCL_SPLIT_NOCOLOR", color);
    *newcomm = nullptr;
    auto owned = ownConfig(config);
    return submitManagement(comm, [comm, color, key, newcomm, owned] {
      ActiveCall active(comm->health);
      return commSplit(comm, color, key, newcomm, owned->get());
    });
  });
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return apiGuard("ncclCommShrink", [&] {
    // A failed or revoked parent is what shrink is for: only liveness and init are required.
    BRAID_TRY(checkComm(comm, false));
    if (!comm->health.initialized)
      return fail(ncclInvalidUsage, "comm %p has not completed initialisation",
                  static_cast<void*>(comm));
    if (!newcomm) return fail(ncclInvalidArgument, "newcomm (the output pointer) is NULL");
    *newcomm = nullptr;
    if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT)
      return fail(ncclInvalidArgument,
                  "shrinkFlags=%d: must be NCCL_SHRINK_DEFAULT (0) or NCCL_SHRINK_ABORT (1)",
                  shrinkFlags);
    std::vector<int> excluded;
    BRAID_TRY(checkExcludeList(comm, excludeRanksList, excludeRanksCount, &excluded));
    if (config) {
      CommConfig checked;
      BRAID_TRY(loadConfig(config, &checked));
    }
    if (shrinkFlags == NCCL_SHRINK_ABORT) {
      commRevoke(comm);  // ends the calls in progress; the parent stays revoked
    } else if (!commIsNonblocking(comm) && comm->health.activeCalls.load() > 0) {
      return fail(ncclInvalidUsage,
                  "comm %p has %d calls in progress on other threads: NCCL_SHRINK_DEFAULT expects "
                  "none (NCCL_SHRINK_ABORT ends them)",
                  static_cast<void*>(comm), comm->health.activeCalls.load());
    }
    auto owned = ownConfig(config);
    return submitManagement(comm, [comm, excluded, newcomm, owned] {
      ActiveCall active(comm->health);
      return commShrink(comm, excluded, owned->get(), newcomm);
    });
  });
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return apiGuard("ncclCommRevoke", [&] {
    if (!comm) return ncclSuccess;  // as NCCL
    BRAID_TRY(checkComm(comm, false));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return fail(ncclInvalidArgument, "revokeFlags=%d: must be NCCL_REVOKE_DEFAULT (0)",
                  revokeFlags);
    if (comm->health.revoked.load())
      return fail(ncclInvalidArgument, "comm %p is already revoked", static_cast<void*>(comm));
    commRevoke(comm);  // bounded (calls leave within a sleep slice): done before it returns
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return apiGuard("ncclCommFinalize", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (comm->health.revoked.load())
      return fail(ncclInvalidUsage, "comm %p was revoked: finalize it no more, destroy it",
                  static_cast<void*>(comm));
    // Host collectives complete before they return; a non-blocking communicator's state reads
    // ncclInProgress until the work queued before this call has run.
    if (commIsNonblocking(comm)) return submitManagement(comm, [] { return ncclSuccess; });
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return apiGuard("ncclCommDestroy", [&] {
    if (!comm) return ncclSuccess;  // as NCCL: destroying NULL is a no-op
    BRAID_TRY(checkComm(comm, false));
    commRelease(comm, false);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return apiGuard("ncclCommAbort", [&] {
    if (!comm) return ncclSuccess;
    BRAID_TRY(checkComm(comm, false));
    commRelease(comm, true);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return apiGuard("ncclCommCount", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!count) return fail(ncclInvalidArgument, "count is NULL");
    *count = comm->nranks();
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return apiGuard("ncclCommUserRank", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!rank) return fail(ncclInvalidArgument, "rank is NULL");
    *rank = comm->rank();
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return apiGuard("ncclCommCuDevice", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!device) return fail(ncclInvalidArgument, "device is NULL");
    *device = comm->device.cudaDevice;  // current at init; -1 without CUDA devices
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return apiGuard("ncclCommGetAsyncError", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!asyncError) return fail(ncclInvalidArgument, "asyncError is NULL");
    noteKernelFailures(comm);
    *asyncError = comm->health.state();
    // The failure may have happened on another thread (a non-blocking communicator's lane): its
    // reason becomes this thread's ncclGetLastError text.
    if (*asyncError != ncclSuccess && *asyncError != ncclInProgress)
      setLastError(comm->health.errorText());
    return ncclSuccess;
  });
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error (run with NCCL_DEBUG=INFO for details)";
    case ncclInvalidArgument:
      return "invalid argument (see ncclGetLastError for details)";
    case ncclInvalidUsage:
      return "invalid usage (see ncclGetLastError for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  (void)comm;  // the text is per thread, so concurrent ranks do not overwrite each other's
  return lastError().c_str();
}

NCCL_API(void, ncclResetDebugInit) {}
