// broadcast_perf: nccl-tests' Broadcast benchmark on Braid, with host buffers.
//
//   braidrun -n 4 build/bench/broadcast_perf -b 8 -e 64M -f 2
//   build/bench/broadcast_perf -t 4 -b 8 -e 1M -f 4 -d all -r -1
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void broadcastByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                        std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                        std::size_t count, std::size_t /*eltSize*/, int /*nranks*/) {
  *sendCount = count;
  *recvCount = count;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = 0;
  *paramCount = count;
}

void broadcastInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                       bool inPlace) {
  if (rank == call.root) {
    fillInput(inPlace ? recvbuff : sendbuff, call.count, 0, call.copiedSpec(call.root), 0);
    if (!inPlace) poisonOutput(recvbuff, call.count, call.type);
    return;
  }
  // Only the root's send buffer is read; poisoning the others' shows a library that reads one.
  if (!inPlace) poisonOutput(sendbuff, call.count, call.type);
  poisonOutput(recvbuff, call.count, call.type);
}

std::int64_t broadcastCheck(const CollCall& call, int /*rank*/, const void* recvbuff,
                            bool /*inPlace*/) {
  return countWrongCopied(recvbuff, call.count, 0, call.copiedSpec(call.root), 0);
}

void broadcastBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                        double* busBw, int /*nranks*/) {
  // Pipelined along a chain, each link carries the data once: bus bandwidth = algorithm bandwidth.
  *algBw = static_cast<double>(count * typeSize) / 1.0e9 / seconds;
  *busBw = *algBw;
}

ncclResult_t broadcastRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                          std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                          ncclRedOp_t /*op*/, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclBroadcast(static_cast<char*>(sendbuff) + sendOffset,
                       static_cast<char*>(recvbuff) + recvOffset, count, type, root, comm, stream);
}

constexpr CollectiveTest kBroadcastTest = {
    "Broadcast",        broadcastByteCount, broadcastInitData, broadcastCheck,
    broadcastBandwidth, broadcastRun,       /*usesOp=*/false,  /*usesRoot=*/true,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kBroadcastTest);
}
