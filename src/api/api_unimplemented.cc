// Entry points of NCCL 2.28 that this version of Braid does not provide yet. Each returns
// ncclInvalidUsage and says so through ncclGetLastError: none pretends to succeed.
#pragma GCC diagnostic ignored "-Wunused-parameter"  // stubs take NCCL's parameters unused
#include "api/api.h"

using namespace braid;

#define BRAID_NOT_IMPLEMENTED(func, ...)      \
  NCCL_API(ncclResult_t, func, __VA_ARGS__) { \
    return notImplemented(#func);             \
  }

BRAID_NOT_IMPLEMENTED(ncclMemAlloc, void** ptr, size_t size)
BRAID_NOT_IMPLEMENTED(ncclMemFree, void* ptr)
BRAID_NOT_IMPLEMENTED(ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
                      void** handle)
BRAID_NOT_IMPLEMENTED(ncclCommDeregister, const ncclComm_t comm, void* handle)
BRAID_NOT_IMPLEMENTED(ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
                      ncclWindow_t* win, int winFlags)
BRAID_NOT_IMPLEMENTED(ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win)
