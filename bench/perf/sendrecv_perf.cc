// sendrecv_perf: nccl-tests' SendRecv benchmark on Braid, with host buffers: every rank sends
// count elements to the next rank and receives as many from the previous one, in one group.
// In place, one buffer is both sent and received into, so its result is a race: the in-place
// columns are timed but not checked (#wrong N/A), as nccl-tests does not report them either.
//
//   braidrun -n 4 build/bench/sendrecv_perf -b 8 -e 64M -f 2
//   build/bench/sendrecv_perf -t 4 -b 8 -e 1M -f 4 -d all
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void sendRecvByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                       std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                       std::size_t count, std::size_t /*eltSize*/, int /*nranks*/) {
  *sendCount = count;
  *recvCount = count;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = 0;
  *paramCount = count;
}

void sendRecvInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                      bool inPlace) {
  if (inPlace) {
    fillInput(recvbuff, call.count, 0, call.copiedSpec(rank), 0);
    return;
  }
  fillInput(sendbuff, call.count, 0, call.copiedSpec(rank), 0);
  poisonOutput(recvbuff, call.count, call.type);
}

std::int64_t sendRecvCheck(const CollCall& call, int rank, const void* recvbuff, bool /*inPlace*/) {
  int previous = (rank - 1 + call.nranks) % call.nranks;
  return countWrongCopied(recvbuff, call.count, 0, call.copiedSpec(previous), 0);
}

void sendRecvBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                       double* busBw, int /*nranks*/) {
  // Each link carries the message once.
  *algBw = static_cast<double>(count * typeSize) / 1.0e9 / seconds;
  *busBw = *algBw;
}

ncclResult_t sendRecvRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                         std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                         ncclRedOp_t /*op*/, int /*root*/, ncclComm_t comm, cudaStream_t stream) {
  int nranks = 0, rank = 0;
  PERF_NCCL_RETURN(ncclCommCount(comm, &nranks));
  PERF_NCCL_RETURN(ncclCommUserRank(comm, &rank));
  PERF_NCCL_RETURN(ncclGroupStart());
  ncclResult_t sent = ncclSend(static_cast<char*>(sendbuff) + sendOffset, count, type,
                               (rank + 1) % nranks, comm, stream);
  ncclResult_t received = ncclRecv(static_cast<char*>(recvbuff) + recvOffset, count, type,
                                   (rank - 1 + nranks) % nranks, comm, stream);
  ncclResult_t ended = ncclGroupEnd();
  return sent != ncclSuccess ? sent : received != ncclSuccess ? received : ended;
}

constexpr CollectiveTest kSendRecvTest = {
    "SendRecv",  sendRecvByteCount, sendRecvInitData,   sendRecvCheck,           sendRecvBandwidth,
    sendRecvRun, /*usesOp=*/false,  /*usesRoot=*/false, InPlaceMode::kUnchecked,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kSendRecvTest);
}
