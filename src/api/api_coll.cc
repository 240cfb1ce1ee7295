// Collective entry points: validate, translate into CollArgs, run now or at group end.
#include <cstring>

#include "algorithms/algorithm.h"
#include "api/api.h"
#include "core/group.h"

using namespace braid;

namespace {

ncclResult_t enqueueReduction(const char* fn, CollType coll, const void* sendbuff, void* recvbuff,
                              size_t count, ncclDataType_t dtype, ncclRedOp_t op, int root,
                              ncclComm_t comm) {
  BRAID_TRY(checkComm(comm));
  BRAID_TRY(checkDataType(dtype));
  if (count > 0 && !sendbuff)
    return fail(ncclInvalidArgument, "sendbuff is NULL with count=%zu", count);
  if (count > 0 && !recvbuff)
    return fail(ncclInvalidArgument, "recvbuff is NULL with count=%zu", count);
  CollArgs args;
  args.coll = coll;
  args.sendbuff = sendbuff;
  args.recvbuff = recvbuff;
  args.count = count;
  args.elemSize = kernels::typeSize(dtype);
  args.root = root;
  BRAID_TRY(resolveOp(comm, op, dtype, &args.op));
  if (count == 0) return ncclSuccess;
  (void)fn;
  return runOrDefer(comm, [comm, args]() mutable {
    ActiveCall active(comm);
    return runCollective(*comm, args);
  });
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  (void)stream;  // host buffers: the call completes before it returns
  return apiGuard("ncclAllReduce", [&] {
    return enqueueReduction("ncclAllReduce", CollType::kAllReduce, sendbuff, recvbuff, count,
                            datatype, op, 0, comm);
  });
}

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  return apiGuard("ncclRedOpCreatePreMulSum", [&] {
    BRAID_TRY(checkComm(comm, false));
    if (!op) return fail(ncclInvalidArgument, "op (the output pointer) is NULL");
    if (!scalar) return fail(ncclInvalidArgument, "scalar is NULL");
    BRAID_TRY(checkDataType(datatype));
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
      return fail(ncclInvalidArgument, "residence=%d is not a ncclScalarResidence_t",
                  static_cast<int>(residence));
    UserRedOp u;
    u.inUse = true;
    u.dtype = datatype;
    u.residence = residence;
    if (residence == ncclScalarHostImmediate)
      memcpy(u.value, scalar, kernels::typeSize(datatype));
    else
      u.pointer = scalar;
    size_t index = 0;
    while (index < comm->userOps.size() && comm->userOps[index].inUse) index++;
    if (index == comm->userOps.size())
      comm->userOps.push_back(u);
    else
      comm->userOps[index] = u;
    *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return apiGuard("ncclRedOpDestroy", [&] {
    BRAID_TRY(checkComm(comm, false));
    int v = static_cast<int>(op);
    size_t index = static_cast<size_t>(v) - ncclNumOps;
    if (v < ncclNumOps || index >= comm->userOps.size() || !comm->userOps[index].inUse)
      return fail(ncclInvalidArgument, "op=%d was not created on comm %p (or was destroyed)", v,
                  static_cast<void*>(comm));
    comm->userOps[index].inUse = false;
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclGroupStart) {
  return apiGuard("ncclGroupStart", [] { return groupStart(); });
}

NCCL_API(ncclResult_t, ncclGroupEnd) {
  return apiGuard("ncclGroupEnd", [] { return groupEnd(); });
}
