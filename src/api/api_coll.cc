// Collective entry points: each checks its arguments (what the collective table says the call
// takes), builds a plan and submits it to the executor.
#include <cstring>

#include "api/api.h"
#include "exec/executor.h"
#include "exec/group.h"

using namespace braid;

namespace {

ncclResult_t submitCollective(CollType coll, const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t dtype, ncclRedOp_t op, int root, ncclComm_t comm,
                              cudaStream_t stream) {
  BRAID_TRY(checkComm(comm));
  BRAID_TRY(checkDataType(dtype));
  const CollectiveInfo& info = collectiveInfo(coll);
  if (info.rooted && (root < 0 || root >= comm->nranks()))
    return fail(ncclInvalidArgument, "root=%d is outside [0, nranks=%d)", root, comm->nranks());
  const bool isRoot = comm->rank() == root;
  // A buffer the call does not use on this rank (a broadcast's sendbuff off the root, a
  // reduce's recvbuff) may be NULL.
  if (count > 0 && extentBytes(info.send, 1, comm->nranks(), isRoot) > 0 && !sendbuff)
    return fail(ncclInvalidArgument, "sendbuff is NULL with count=%zu", count);
  if (count > 0 && extentBytes(info.recv, 1, comm->nranks(), isRoot) > 0 && !recvbuff)
    return fail(ncclInvalidArgument, "recvbuff is NULL with count=%zu", count);
  Plan plan;
  plan.comm = comm;
  plan.stream = stream;
  CollArgs& args = plan.coll;
  args.coll = coll;
  args.sendbuff = sendbuff;
  args.recvbuff = recvbuff;
  args.count = count;
  args.elemSize = kernels::typeSize(dtype);
  args.root = info.rooted ? root : 0;
  args.reduction = info.reduction;
  args.userOp = info.reduction ? static_cast<int>(op) : 0;
  if (info.reduction) {
    BRAID_TRY(resolveOp(comm, op, dtype, &args.op, &args.deviceScalar));
  } else {
    args.op.dtype = dtype;
  }
  if (count == 0) return ncclSuccess;
  return submit(std::move(plan));
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllReduce", [&] {
    return submitCollective(CollType::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm,
                            stream);
  });
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBroadcast", [&] {
    return submitCollective(CollType::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum,
                            root, comm, stream);
  });
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBcast", [&] {
    return submitCollective(CollType::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm,
                            stream);
  });
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduce", [&] {
    return submitCollective(CollType::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm,
                            stream);
  });
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllGather", [&] {
    return submitCollective(CollType::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum,
                            0, comm, stream);
  });
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduceScatter", [&] {
    return submitCollective(CollType::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op,
                            0, comm, stream);
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

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return apiGuard("ncclGroupSimulateEnd", [&]() -> ncclResult_t {
    if (!simInfo) return fail(ncclInvalidArgument, "simInfo is NULL");
    if (simInfo->magic != 0x74685283u || simInfo->size != sizeof(ncclSimInfo_t))
      return fail(ncclInvalidArgument,
                  "simInfo (magic 0x%08x, size %zu) was not set up with NCCL_SIM_INFO_INITIALIZER",
                  simInfo->magic, simInfo->size);
    double us = 0;
    BRAID_TRY(groupSimulateEnd(&us));
    simInfo->estimatedTime = static_cast<float>(us);
    return ncclSuccess;
  });
}

NCCL_API(ncclResult_t, ncclGroupEnd) {
  return apiGuard("ncclGroupEnd", [] { return groupEnd(); });
}
