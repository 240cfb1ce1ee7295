// The C API boundary: exported names (ncclX as a weak alias of pncclX, as NVIDIA's library does,
// so profilers can interpose), the exception guard, and the argument checks shared by entries.
#pragma once

#include <exception>
#include <new>

#include "comm/communicator.h"
#include "exec/plan.h"
#include "nccl.h"
#include "util/status.h"

#define BRAID_EXPORT __attribute__((visibility("default")))

/// Defines p<func> and exports <func> as its weak alias.
#define NCCL_API(ret, func, ...)                                                         \
  extern "C" BRAID_EXPORT ret func(__VA_ARGS__) __attribute__((weak, alias("p" #func))); \
  extern "C" BRAID_EXPORT ret p##func(__VA_ARGS__)

namespace braid {

/// Runs an API body; no exception crosses the C boundary.
template <class Body>
ncclResult_t apiGuard(const char* fn, Body&& body) noexcept {
  try {
    ncclResult_t r = body();
    if (r != ncclSuccess && r != ncclInProgress) addContext(r, "%s", fn);
    return r;
  } catch (const std::bad_alloc&) {
    return fail(ncclSystemError, "%s: out of memory", fn);
  } catch (const std::exception& e) {
    return fail(ncclInternalError, "%s: unexpected exception: %s", fn, e.what());
  } catch (...) {
    return fail(ncclInternalError, "%s: unexpected exception", fn);
  }
}

/// `comm` must be a live, initialised communicator that has not failed.
ncclResult_t checkComm(ncclComm_t comm, bool mustBeHealthy = true);
/// `dtype` must be one of ncclDataType_t's values.
ncclResult_t checkDataType(ncclDataType_t dtype);
/// ncclAvg's factor for a floating `dtype`, as NCCL computes it: (dtype)(1.0 / nranks), through
/// float for every type but double, written to `scalar` in the dtype's own representation.
/// False (nothing written) for an integer dtype, whose average is a truncating post-divide.
bool avgPreMultiplier(ncclDataType_t dtype, int nranks, unsigned char* scalar);
/// Resolves `op` (built-in or created on `comm`) for `dtype` into the kernels' description:
/// ncclAvg is a premulsum by avgPreMultiplier for floats, a sum divided by nranks for integers.
/// A premulsum scalar in device memory is not read here: its address goes to *deviceScalar.
ncclResult_t resolveOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t dtype,
                       kernels::ReduceOp* out, const void** deviceScalar);

}  // namespace braid
