// Memory for collectives: ncclMemAlloc/ncclMemFree (memory of the current GPU where there is
// one, as NCCL's; otherwise host memory peers can map), buffer
// registration (ncclCommRegister, local) and windows (ncclCommWindowRegister, collective). On the
// host, registering ncclMemAlloc memory lets shared-memory collectives read peers' buffers in
// place; see docs/performance.md ("Zero-copy").
#include <cstring>
#include <string>
#include <vector>

#include "api/api.h"
#include "core/buffer_registration.h"
#include "core/device_pool.h"
#include "core/shared_memory.h"
#include "device/device_runtime.h"

using namespace braid;

NCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return apiGuard("ncclMemAlloc", [&] {
    // As NCCL: memory of the calling thread's current device (nccl-tests -R, PyTorch's NCCL
    // memory pool put kernels' buffers there). Without a device: host memory peers can map.
    DeviceRuntime& rt = deviceRuntime();
    int device = -1;
    if (!ptr || size == 0 || rt.deviceCount() == 0 || rt.currentDevice(&device) != ncclSuccess ||
        device < 0)
      return sharedAlloc(size, ptr);
    // From the pool (core/device_pool.h): freeing device memory would wait for every kernel
    // of the process, a peer's included.
    if (ncclResult_t r = DevicePool::instance().alloc(rt, device, size, ptr); r != ncclSuccess)
      return addContext(r, "ncclMemAlloc: %zu bytes of device %d", size, device);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  return apiGuard("ncclMemFree", [&] {
    if (DevicePool::instance().free(ptr)) return ncclSuccess;  // kept for the next alloc
    return sharedFree(ptr);
  });
}

namespace {

ncclResult_t checkRange(const void* buff, size_t size) {
  if (!buff) return fail(ncclInvalidArgument, "buff is NULL");
  if (size == 0) return fail(ncclInvalidArgument, "size is 0");
  if (reinterpret_cast<uintptr_t>(buff) > UINTPTR_MAX - size)
    return fail(ncclInvalidArgument, "buff %p + size %zu wraps around", buff, size);
  return ncclSuccess;
}

// What each rank contributes to a window registration, so every rank can check the others.
struct WindowClaim {
  uint64_t size;
  int32_t flags;
  int32_t valid;  ///< 0: this rank refused its own arguments (it fails; so must everyone)
};

ncclResult_t agreeOnWindow(ncclComm* comm, const WindowClaim& mine) {
  std::vector<std::string> all;
  BRAID_TRY(comm->team.bootstrap->allGather(
      std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)), &all));
  for (int r = 0; r < comm->nranks(); r++) {
    WindowClaim c;
    if (all[r].size() != sizeof(c))
      return fail(ncclInternalError, "window registration: malformed claim from rank %d", r);
    memcpy(&c, all[r].data(), sizeof(c));
    if (!c.valid)
      return fail(ncclInvalidArgument, "window registration: rank %d refused its arguments", r);
    if (c.flags != mine.flags)
      return fail(ncclInvalidArgument,
                  "winFlags %d on rank %d but %d on rank %d: every rank must pass the same flags",
                  mine.flags, comm->rank(), c.flags, r);
    if ((mine.flags & NCCL_WIN_COLL_SYMMETRIC) && c.size != mine.size)
      return fail(ncclInvalidArgument,
                  "size %llu on rank %d but %llu on rank %d: a symmetric window "
                  "(NCCL_WIN_COLL_SYMMETRIC) has the same size on every rank",
                  static_cast<unsigned long long>(mine.size), comm->rank(),
                  static_cast<unsigned long long>(c.size), r);
  }
  return ncclSuccess;
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  return apiGuard("ncclCommRegister", [&] {
    BRAID_TRY(checkComm(comm));
    if (!handle) return fail(ncclInvalidArgument, "handle is NULL");
    BRAID_TRY(checkRange(buff, size));
    *handle = comm->registrations.add(buff, size, false, 0);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  return apiGuard("ncclCommDeregister", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!comm->registrations.remove(handle, false))
      return fail(ncclInvalidArgument,
                  "handle %p is not a registration of this communicator (rank %d)", handle,
                  comm->rank());
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags) {
  return apiGuard("ncclCommWindowRegister", [&] {
    BRAID_TRY(checkComm(comm));
    ActiveCall active(comm->health);
    // Refusals are told to the other ranks before returning, so none waits for this one.
    ncclResult_t local = ncclSuccess;
    if (!win)
      local = fail(ncclInvalidArgument, "win is NULL");
    else if (winFlags & ~NCCL_WIN_COLL_SYMMETRIC)
      local = fail(ncclInvalidArgument,
                   "winFlags %d: only NCCL_WIN_DEFAULT (0) and "
                   "NCCL_WIN_COLL_SYMMETRIC (1) exist",
                   winFlags);
    else
      local = checkRange(buff, size);
    std::string localText = local == ncclSuccess ? "" : lastError();
    WindowClaim mine{size, winFlags, local == ncclSuccess};
    ncclResult_t agreed = agreeOnWindow(comm, mine);
    if (local != ncclSuccess) return fail(local, "%s", localText.c_str());
    BRAID_TRY(agreed);
    *win = reinterpret_cast<ncclWindow_t>(comm->registrations.add(buff, size, true, winFlags));
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return apiGuard("ncclCommWindowDeregister", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!comm->registrations.remove(win, true))
      return fail(ncclInvalidArgument, "win %p is not a window of this communicator (rank %d)",
                  static_cast<void*>(win), comm->rank());
    return ncclSuccess;
  });
}
