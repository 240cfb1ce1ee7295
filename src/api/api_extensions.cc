// Braid's own entry points (include/braid/braid.h).
#include "api/api.h"
#include "braid/braid.h"

using namespace braid;

extern "C" BRAID_EXPORT ncclResult_t braidBarrier(ncclComm_t comm) {
  return apiGuard("braidBarrier", [&] {
    BRAID_TRY(checkComm(comm));
    uint8_t token = 0, sum = 0;
    return pncclAllReduce(&token, &sum, 1, ncclUint8, ncclSum, comm, nullptr);
  });
}
