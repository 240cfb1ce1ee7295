// Point-to-point and the collectives built on it (AlltoAll, Gather, Scatter): each call becomes
// a batch of sends and receives that progress together (algorithms/p2p.h). ncclSend/ncclRecv
// inside a group join one batch per communicator, run at ncclGroupEnd.
#include "algorithms/cost_model.h"
#include "algorithms/p2p.h"
#include "api/api.h"
#include "core/group.h"
#include "core/host_stream.h"
#include "device/device_staging.h"
#include "kernels/reduce.h"

using namespace braid;

namespace {

ncclResult_t runBatch(ncclComm* comm, std::vector<P2pOp> ops, bool device = false) {
  ActiveCall active(comm);
  ncclResult_t r = runP2pBatch(*comm, ops, device);
  if (r != ncclSuccess) commSetError(comm, r, lastError());
  return r;
}

std::vector<CallBuffer> p2pBuffers(const std::vector<P2pOp>& ops) {
  std::vector<CallBuffer> buffers;
  for (const P2pOp& op : ops) {
    if (op.isSend)
      buffers.push_back({"sendbuff", op.src, op.bytes, true, false});
    else
      buffers.push_back({"recvbuff", op.dst, op.bytes, false, true});
  }
  return buffers;
}

// Device buffers: the batch runs on the GPU over the P2P transport, or on staged copies,
// enqueued on the CUDA stream.
ncclResult_t runBatchOnDevice(ncclComm* comm, cudaStream_t stream, const std::vector<P2pOp>& ops) {
  if (comm->deviceDirect)
    return runDirect(comm, stream, [comm, ops] { return runBatch(comm, ops, true); });
  return runStaged(comm, stream, p2pBuffers(ops), [comm, ops](const std::vector<void*>& staged) {
    std::vector<P2pOp> onHost = ops;
    for (size_t i = 0; i < onHost.size(); ++i) {
      if (onHost[i].isSend)
        onHost[i].src = static_cast<const char*>(staged[i]);
      else
        onHost[i].dst = static_cast<char*>(staged[i]);
    }
    return runBatch(comm, onHost);
  });
}

// Runs a batch now, on a host stream, or at the group's end; inside a group it carries the cost
// model's estimate for ncclGroupSimulateEnd (outside one, no estimate is built). Device buffers
// are enqueued on the CUDA stream at once.
ncclResult_t runOps(ncclComm* comm, cudaStream_t cudaStream, std::vector<P2pOp> ops) {
  bool onDevice = false;
  BRAID_TRY(placeCall(comm, p2pBuffers(ops), cudaStream, &onDevice));
  if (onDevice) return runBatchOnDevice(comm, cudaStream, ops);
  HostStream* stream = hostStreamFromHandle(cudaStream);
  if (runsNow(comm, stream)) return runInTurn(comm, [&] { return runBatch(comm, ops); });
  TaskEstimate estimate;
  if (groupActive()) {
    size_t bytes = 0;
    for (const P2pOp& op : ops) bytes += op.bytes;
    estimate = [comm, n = ops.size(), bytes] { return estimateP2pUs(*comm, n, bytes); };
  }
  return runOrDefer(
      comm, stream, [comm, ops = std::move(ops)] { return runBatch(comm, ops); },
      std::move(estimate));
}

ncclResult_t enqueueP2p(bool isSend, const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t dtype, int peer, ncclComm_t comm, cudaStream_t stream) {
  BRAID_TRY(checkComm(comm));
  BRAID_TRY(checkDataType(dtype));
  if (peer < 0 || peer >= comm->nranks)
    return fail(ncclInvalidArgument, "peer=%d is outside [0, nranks=%d)", peer, comm->nranks);
  if (count > 0 && isSend && !sendbuff)
    return fail(ncclInvalidArgument, "sendbuff is NULL with count=%zu", count);
  if (count > 0 && !isSend && !recvbuff)
    return fail(ncclInvalidArgument, "recvbuff is NULL with count=%zu", count);
  P2pRequest req{isSend, peer, sendbuff, recvbuff, count * kernels::typeSize(dtype)};
  auto toOp = [](const P2pRequest& q) {
    return P2pOp{q.isSend, q.peer, static_cast<const char*>(q.sendbuff),
                 static_cast<char*>(q.recvbuff), q.bytes};
  };
  HostStream* hostStream = hostStreamFromHandle(stream);
  if (!groupActive()) {
    std::vector<P2pOp> ops{toOp(req)};
    return runOps(comm, stream, std::move(ops));
  }
  // The group's sends and receives on this communicator form one batch; the task owns it, so a
  // group queued on a host stream is not disturbed by the next group's calls.
  if (!comm->pendingP2p || comm->pendingP2pGroup != groupSerial()) {
    auto batch = std::make_shared<std::vector<P2pRequest>>();
    comm->pendingP2p = batch;
    comm->pendingP2pGroup = groupSerial();
    groupAdd(
        comm,
        [comm, toOp, batch, stream]() -> ncclResult_t {
          std::vector<P2pOp> ops;
          for (const P2pRequest& q : *batch) ops.push_back(toOp(q));
          // The group's buffers are placed together: all host or all device memory.
          bool onDevice = false;
          BRAID_TRY(placeCall(comm, p2pBuffers(ops), stream, &onDevice));
          if (onDevice) return runBatchOnDevice(comm, stream, ops);
          return runBatch(comm, std::move(ops));
        },
        hostStream,
        [comm, batch] {
          size_t bytes = 0;
          for (const P2pRequest& q : *batch) bytes += q.bytes;
          return estimateP2pUs(*comm, batch->size(), bytes);
        });
  }
  comm->pendingP2p->push_back(req);
  return ncclSuccess;
}

// Checks shared by the rooted and all-to-all p2p collectives (the comm is already checked).
ncclResult_t checkBlocks(ncclDataType_t dtype, size_t count, const void* sendbuff, bool needSend,
                         const void* recvbuff, bool needRecv) {
  BRAID_TRY(checkDataType(dtype));
  if (count > 0 && needSend && !sendbuff)
    return fail(ncclInvalidArgument, "sendbuff is NULL with count=%zu", count);
  if (count > 0 && needRecv && !recvbuff)
    return fail(ncclInvalidArgument, "recvbuff is NULL with count=%zu", count);
  return ncclSuccess;
}

ncclResult_t checkRoot(ncclComm_t comm, int root) {
  if (root < 0 || root >= comm->nranks)
    return fail(ncclInvalidArgument, "root=%d is outside [0, nranks=%d)", root, comm->nranks);
  return ncclSuccess;
}

}  // namespace

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclSend", [&] {
    return enqueueP2p(true, sendbuff, nullptr, count, datatype, peer, comm, stream);
  });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclRecv", [&] {
    return enqueueP2p(false, nullptr, recvbuff, count, datatype, peer, comm, stream);
  });
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclAlltoAll", [&]() -> ncclResult_t {
    BRAID_TRY(checkComm(comm));
    BRAID_TRY(checkBlocks(datatype, count, sendbuff, true, recvbuff, true));
    if (count == 0) return ncclSuccess;
    if (sendbuff == recvbuff)
      return fail(ncclInvalidArgument, "ncclAlltoAll is out-of-place only: sendbuff == recvbuff");
    size_t block = count * kernels::typeSize(datatype);
    std::vector<P2pOp> ops;
    for (int p = 0; p < comm->nranks; p++) {
      ops.push_back({true, p, static_cast<const char*>(sendbuff) + p * block, nullptr, block});
      ops.push_back({false, p, nullptr, static_cast<char*>(recvbuff) + p * block, block});
    }
    return runOps(comm, stream, std::move(ops));
  });
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclGather", [&]() -> ncclResult_t {
    BRAID_TRY(checkComm(comm));
    BRAID_TRY(checkRoot(comm, root));
    bool isRoot = comm->rank == root;
    BRAID_TRY(checkBlocks(datatype, count, sendbuff, true, recvbuff, isRoot));
    if (count == 0) return ncclSuccess;
    size_t block = count * kernels::typeSize(datatype);
    std::vector<P2pOp> ops;
    ops.push_back({true, root, static_cast<const char*>(sendbuff), nullptr, block});
    if (isRoot)
      for (int p = 0; p < comm->nranks; p++)
        ops.push_back({false, p, nullptr, static_cast<char*>(recvbuff) + p * block, block});
    return runOps(comm, stream, std::move(ops));
  });
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclScatter", [&]() -> ncclResult_t {
    BRAID_TRY(checkComm(comm));
    BRAID_TRY(checkRoot(comm, root));
    bool isRoot = comm->rank == root;
    BRAID_TRY(checkBlocks(datatype, count, sendbuff, isRoot, recvbuff, true));
    if (count == 0) return ncclSuccess;
    size_t block = count * kernels::typeSize(datatype);
    std::vector<P2pOp> ops;
    if (isRoot)
      for (int p = 0; p < comm->nranks; p++)
        ops.push_back({true, p, static_cast<const char*>(sendbuff) + p * block, nullptr, block});
    ops.push_back({false, root, nullptr, static_cast<char*>(recvbuff), block});
    return runOps(comm, stream, std::move(ops));
  });
}
