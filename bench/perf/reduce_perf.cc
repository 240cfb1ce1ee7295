// reduce_perf: nccl-tests' Reduce benchmark on Braid, with host buffers.
//
//   braidrun -n 4 build/bench/reduce_perf -b 8 -e 64M -f 2
//   build/bench/reduce_perf -t 4 -b 8 -e 1M -f 4 -o all -d all -r -1
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void reduceByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                     std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                     std::size_t count, std::size_t /*eltSize*/, int /*nranks*/) {
  *sendCount = count;
  *recvCount = count;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = 0;
  *paramCount = count;
}

void reduceInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff, bool inPlace) {
  // Every rank's receive buffer starts poisoned out of place: the root's must be written, the
  // others' must stay as they are (nccl-tests expects them unchanged too).
  if (inPlace) {
    fillInput(recvbuff, call.count, 0, call.dataSpec(), rank);
  } else {
    fillInput(sendbuff, call.count, 0, call.dataSpec(), rank);
    poisonOutput(recvbuff, call.count, call.type);
  }
}

std::int64_t reduceCheck(const CollCall& call, int rank, const void* recvbuff, bool inPlace) {
  if (rank == call.root) return countWrongReduced(recvbuff, call.count, 0, call.dataSpec());
  // Only the root has a result; elsewhere the receive buffer (in place: the input) is untouched.
  if (inPlace) return countWrongCopied(recvbuff, call.count, 0, call.dataSpec(), rank);
  return countOverwritten(recvbuff, call.count, call.type);
}

void reduceBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                     double* busBw, int /*nranks*/) {
  // The root receives count elements, reduced from every rank: a pipeline through the ring
  // moves each byte once per link, so the bus bandwidth equals the algorithm bandwidth.
  *algBw = static_cast<double>(count * typeSize) / 1.0e9 / seconds;
  *busBw = *algBw;
}

ncclResult_t reduceRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                       std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclReduce(static_cast<char*>(sendbuff) + sendOffset,
                    static_cast<char*>(recvbuff) + recvOffset, count, type, op, root, comm, stream);
}

constexpr CollectiveTest kReduceTest = {
    "Reduce",        reduceByteCount, reduceInitData,  reduceCheck,
    reduceBandwidth, reduceRun,       /*usesOp=*/true, /*usesRoot=*/true,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kReduceTest);
}
