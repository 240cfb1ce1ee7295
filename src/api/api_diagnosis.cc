// Braid's diagnosis entry points (include/braid/braid.h): the per-communicator timeout and an
// explicit flight-recorder dump.
#include <cmath>

#include "api/api.h"
#include "braid/braid.h"

using namespace braid;

extern "C" BRAID_EXPORT ncclResult_t braidCommSetTimeout(ncclComm_t comm, double seconds) {
  return apiGuard("braidCommSetTimeout", [&] {
    BRAID_TRY(checkComm(comm));
    if (!std::isfinite(seconds) || seconds < 0)
      return fail(ncclInvalidArgument, "seconds=%g: must be finite and >= 0 (0: no deadline)",
                  seconds);
    comm->config.timeoutS = seconds;
    comm->team.policy.timeoutS = seconds;
    return ncclSuccess;
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidCommGetTimeout(ncclComm_t comm, double* seconds) {
  return apiGuard("braidCommGetTimeout", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!seconds) return fail(ncclInvalidArgument, "seconds is NULL");
    *seconds = comm->team.policy.timeoutS;
    return ncclSuccess;
  });
}

extern "C" BRAID_EXPORT ncclResult_t braidCommDumpFlightRecorder(ncclComm_t comm) {
  return apiGuard("braidCommDumpFlightRecorder", [&] {
    BRAID_TRY(checkComm(comm, false));
    comm->recorder.dump("on request (braidCommDumpFlightRecorder)", true);
    return ncclSuccess;
  });
}
