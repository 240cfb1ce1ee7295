// Collective entry points: validate, translate into CollArgs, run now or at group end.
#include <cstring>

#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "api/api.h"
#include "core/group.h"
#include "core/host_stream.h"
#include "device/device_staging.h"

using namespace braid;

namespace {

// What a collective needs from each argument; the API checks it before anything runs.
struct Need {
  bool sendbuff = true;
  bool recvbuff = true;
  bool rooted = false;
  bool reduction = true;
};

// The buffers as this rank's call uses them (bytes 0: not significant on this rank).
std::vector<CallBuffer> callBuffers(const ncclComm& comm, const CollArgs& args) {
  const size_t bytes = args.count * args.elemSize;
  const bool isRoot = comm.rank == args.root;
  size_t sendBytes = bytes, recvBytes = bytes;
  switch (args.coll) {
    case CollType::kBroadcast:
      sendBytes = isRoot ? bytes : 0;
      break;
    case CollType::kReduce:
      recvBytes = isRoot ? bytes : 0;
      break;
    case CollType::kAllGather:
      recvBytes = bytes * comm.nranks;
      break;
    case CollType::kReduceScatter:
      sendBytes = bytes * comm.nranks;
      break;
    case CollType::kAllReduce:
      break;
  }
  return {{"sendbuff", args.sendbuff, sendBytes, true, false},
          {"recvbuff", args.recvbuff, recvBytes, false, true}};
}

// Device buffers: the call is enqueued on the CUDA stream (device/device_staging.h).
ncclResult_t enqueueOnDevice(ncclComm* comm, const CollArgs& args,
                             const std::vector<CallBuffer>& buffers, cudaStream_t stream) {
  if (comm->deviceDirect)
    return runDirect(comm, stream, [comm, args] {
      CollArgs onDevice = args;
      onDevice.device = true;
      BRAID_TRY(readDeviceScalar(comm, onDevice));
      ActiveCall active(comm);
      return runCollective(*comm, onDevice);
    });
  return runStaged(comm, stream, buffers, [comm, args](const std::vector<void*>& staged) {
    CollArgs onHost = args;
    onHost.sendbuff = staged[0];
    onHost.recvbuff = staged[1];
    BRAID_TRY(readDeviceScalar(comm, onHost));
    ActiveCall active(comm);
    return runCollective(*comm, onHost);
  });
}

ncclResult_t enqueue(CollType coll, const void* sendbuff, void* recvbuff, size_t count,
                     ncclDataType_t dtype, ncclRedOp_t op, int root, ncclComm_t comm,
                     cudaStream_t stream, Need need) {
  BRAID_TRY(checkComm(comm));
  BRAID_TRY(checkDataType(dtype));
  if (need.rooted && (root < 0 || root >= comm->nranks))
    return fail(ncclInvalidArgument, "root=%d is outside [0, nranks=%d)", root, comm->nranks);
  if (count > 0 && need.sendbuff && !sendbuff)
    return fail(ncclInvalidArgument, "sendbuff is NULL with count=%zu", count);
  if (count > 0 && need.recvbuff && !recvbuff)
    return fail(ncclInvalidArgument, "recvbuff is NULL with count=%zu", count);
  CollArgs args;
  args.coll = coll;
  args.sendbuff = sendbuff;
  args.recvbuff = recvbuff;
  args.count = count;
  args.elemSize = kernels::typeSize(dtype);
  args.root = need.rooted ? root : 0;
  args.reduction = need.reduction;
  if (need.reduction) {
    BRAID_TRY(resolveOp(comm, op, dtype, &args.op, &args.deviceScalar));
  } else {
    args.op.dtype = dtype;
  }
  if (count == 0) return ncclSuccess;
  const std::vector<CallBuffer> buffers = callBuffers(*comm, args);
  bool onDevice = false;
  BRAID_TRY(placeCall(comm, buffers, stream, &onDevice));
  if (onDevice) return enqueueOnDevice(comm, args, buffers, stream);
  BRAID_TRY(readDeviceScalar(comm, args));  // host buffers, a device scalar: read it now
  HostStream* hostStream = hostStreamFromHandle(stream);
  if (runsNow(comm, hostStream)) {
    return runInTurn(comm, [&] {
      ActiveCall active(comm);
      return runCollective(*comm, args);
    });
  }
  // The estimate only matters to ncclGroupSimulateEnd: outside a group none is built.
  TaskEstimate estimate;
  if (groupActive())
    estimate = [comm, args] {
      const Algorithm* a = chooseAlgorithm(*comm, args);
      return a ? estimateCollectiveUs(*comm, args, a->name()) : 0.0;
    };
  return runOrDefer(
      comm, hostStream,
      [comm, args]() mutable {
        ActiveCall active(comm);
        return runCollective(*comm, args);
      },
      std::move(estimate));
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllReduce", [&] {
    return enqueue(CollType::kAllReduce, sendbuff, recvbuff, count, datatype, op, 0, comm, stream,
                   Need{});
  });
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBroadcast", [&] {
    bool isRoot = comm && commIsLive(comm) && comm->rank == root;
    return enqueue(CollType::kBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, root, comm,
                   stream, Need{isRoot, true, true, false});
  });
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclBcast", [&] {
    return enqueue(CollType::kBroadcast, buff, buff, count, datatype, ncclSum, root, comm, stream,
                   Need{true, true, true, false});
  });
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduce", [&] {
    bool isRoot = comm && commIsLive(comm) && comm->rank == root;
    return enqueue(CollType::kReduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream,
                   Need{true, isRoot, true, true});
  });
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAllGather", [&] {
    return enqueue(CollType::kAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, comm,
                   stream, Need{true, true, false, false});
  });
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclReduceScatter", [&] {
    return enqueue(CollType::kReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 0, comm,
                   stream, Need{});
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
