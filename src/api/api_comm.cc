// Communicator lifetime: unique ids, init, finalize, destroy, abort, and the queries.
#include <unistd.h>
#include <chrono>

#include <cstring>
#include <thread>

#include "api/api.h"
#include "core/bootstrap_root.h"
#include "core/group.h"
#include "core/host_stream.h"
#include "core/split.h"
#include "core/unique_id.h"
#include "util/env.h"
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
  ncclComm* comm = commAllocate();
  *out = comm;
  if (groupActive()) {
    // Deferred to ncclGroupEnd, where the ranks of this group connect concurrently.
    ncclConfig_t* cfg = config;
    groupAdd(comm, [comm, nranks, id, rank, cfg] {
      ncclResult_t r = commInit(comm, id, nranks, rank, cfg);
      if (r != ncclSuccess) commSetError(comm, r, lastError());
      return r;
    });
    return ncclSuccess;
  }
  ncclResult_t r = commInit(comm, id, nranks, rank, config);
  if (r != ncclSuccess) {
    commFree(comm);
    *out = nullptr;
  }
  return r;
}

void releaseComm(ncclComm* comm, bool abort) {
  if (abort) {
    comm->abortFlag.store(1);
    // Calls blocked on this communicator notice the flag within a sleep slice and leave.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (comm->activeCalls.load() > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // Work queued on host streams still names this communicator (after an abort it fails fast).
  commDrainStreamWork(comm);
  comm->sendTo.clear();
  comm->recvFrom.clear();
  comm->bootstrap.reset();
  commFree(comm);
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
    (void)devlist;  // host ranks: device numbers are not used
    ncclUniqueId id;
    BRAID_TRY(newHostedUniqueId(&id));  // never NCCL_COMM_ID's: that one names the job's root
    groupStart();
    for (int i = 0; i < ndev; i++) {
      ncclResult_t r = initRank(&comms[i], ndev, id, i, nullptr);
      if (r != ncclSuccess) {
        groupEnd();
        return r;
      }
    }
    ncclResult_t r = groupEnd();
    if (r != ncclSuccess) {
      for (int i = 0; i < ndev; i++)
        if (comms[i]) releaseComm(comms[i], true), comms[i] = nullptr;
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
    return runOrDefer(comm, nullptr, [comm, color, key, newcomm, config] {
      ActiveCall active(comm);
      return commSplit(comm, color, key, newcomm, config);
    });
  });
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return apiGuard("ncclCommFinalize", [&] {
    // Host collectives complete before they return: nothing is left to flush.
    return checkComm(comm, false);
  });
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return apiGuard("ncclCommDestroy", [&] {
    if (!comm) return ncclSuccess;  // as NCCL: destroying NULL is a no-op
    BRAID_TRY(checkComm(comm, false));
    releaseComm(comm, false);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return apiGuard("ncclCommAbort", [&] {
    if (!comm) return ncclSuccess;
    BRAID_TRY(checkComm(comm, false));
    releaseComm(comm, true);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return apiGuard("ncclCommCount", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!count) return fail(ncclInvalidArgument, "count is NULL");
    *count = comm->nranks;
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return apiGuard("ncclCommUserRank", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!rank) return fail(ncclInvalidArgument, "rank is NULL");
    *rank = comm->rank;
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return apiGuard("ncclCommCuDevice", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!device) return fail(ncclInvalidArgument, "device is NULL");
    *device = -1;  // a host communicator has no CUDA device
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return apiGuard("ncclCommGetAsyncError", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!asyncError) return fail(ncclInvalidArgument, "asyncError is NULL");
    *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
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
