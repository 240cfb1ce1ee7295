// Point-to-point and the collectives built on it (AlltoAll, Gather, Scatter): each call becomes
// a plan holding a batch of sends and receives that progress together
// (algorithms/sendrecv_batch.h). ncclSend/ncclRecv inside a group join one batch per
// communicator, run at ncclGroupEnd.
#include "api/api.h"
#include "exec/executor.h"
#include "kernels/reduce.h"

using namespace braid;

namespace {

ncclResult_t submitTransfers(ncclComm* comm, cudaStream_t stream, std::vector<Transfer> ops) {
  Plan plan;
  plan.kind = Plan::Kind::kSendRecv;
  plan.comm = comm;
  plan.stream = stream;
  plan.transfers = std::move(ops);
  return submit(std::move(plan));
}

ncclResult_t submitSendRecv(bool isSend, const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t dtype, int peer, ncclComm_t comm, cudaStream_t stream) {
  BRAID_TRY(checkComm(comm));
  BRAID_TRY(checkDataType(dtype));
  if (peer < 0 || peer >= comm->nranks())
    return fail(ncclInvalidArgument, "peer=%d is outside [0, nranks=%d)", peer, comm->nranks());
  if (count > 0 && isSend && !sendbuff)
    return fail(ncclInvalidArgument, "sendbuff is NULL with count=%zu", count);
  if (count > 0 && !isSend && !recvbuff)
    return fail(ncclInvalidArgument, "recvbuff is NULL with count=%zu", count);
  return submitTransfers(
      comm, stream,
      {Transfer{isSend, peer, static_cast<const char*>(sendbuff), static_cast<char*>(recvbuff),
                count * kernels::typeSize(dtype)}});
}

// Checks shared by the rooted and all-to-all point-to-point collectives (the comm is already
// checked).
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
  if (root < 0 || root >= comm->nranks())
    return fail(ncclInvalidArgument, "root=%d is outside [0, nranks=%d)", root, comm->nranks());
  return ncclSuccess;
}

}  // namespace

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclSend", [&] {
    return submitSendRecv(true, sendbuff, nullptr, count, datatype, peer, comm, stream);
  });
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclRecv", [&] {
    return submitSendRecv(false, nullptr, recvbuff, count, datatype, peer, comm, stream);
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
    std::vector<Transfer> ops;
    for (int p = 0; p < comm->nranks(); p++) {
      ops.push_back({true, p, static_cast<const char*>(sendbuff) + p * block, nullptr, block});
      ops.push_back({false, p, nullptr, static_cast<char*>(recvbuff) + p * block, block});
    }
    return submitTransfers(comm, stream, std::move(ops));
  });
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclGather", [&]() -> ncclResult_t {
    BRAID_TRY(checkComm(comm));
    BRAID_TRY(checkRoot(comm, root));
    bool isRoot = comm->rank() == root;
    BRAID_TRY(checkBlocks(datatype, count, sendbuff, true, recvbuff, isRoot));
    if (count == 0) return ncclSuccess;
    size_t block = count * kernels::typeSize(datatype);
    std::vector<Transfer> ops;
    ops.push_back({true, root, static_cast<const char*>(sendbuff), nullptr, block});
    if (isRoot)
      for (int p = 0; p < comm->nranks(); p++)
        ops.push_back({false, p, nullptr, static_cast<char*>(recvbuff) + p * block, block});
    return submitTransfers(comm, stream, std::move(ops));
  });
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  return apiGuard("ncclScatter", [&]() -> ncclResult_t {
    BRAID_TRY(checkComm(comm));
    BRAID_TRY(checkRoot(comm, root));
    bool isRoot = comm->rank() == root;
    BRAID_TRY(checkBlocks(datatype, count, sendbuff, isRoot, recvbuff, true));
    if (count == 0) return ncclSuccess;
    size_t block = count * kernels::typeSize(datatype);
    std::vector<Transfer> ops;
    if (isRoot)
      for (int p = 0; p < comm->nranks(); p++)
        ops.push_back({true, p, static_cast<const char*>(sendbuff) + p * block, nullptr, block});
    ops.push_back({false, root, nullptr, static_cast<char*>(recvbuff), block});
    return submitTransfers(comm, stream, std::move(ops));
  });
}
