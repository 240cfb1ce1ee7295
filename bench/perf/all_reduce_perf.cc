// all_reduce_perf: nccl-tests' AllReduce benchmark on Braid, with host buffers.
//
//   braidrun -n 4 build/bench/all_reduce_perf -b 8 -e 64M -f 2
//   build/bench/all_reduce_perf -t 4 -b 8 -e 64M -f 2 -o all -d all
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void allReduceByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                        std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                        std::size_t count, std::size_t /*eltSize*/, int /*nranks*/) {
  *sendCount = count;
  *recvCount = count;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = 0;
  *paramCount = count;
}

void allReduceInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                       bool inPlace) {
  // In place, the input lives in the receive buffer; otherwise the output starts poisoned so
  // that an element the library never wrote is counted.
  if (inPlace) {
    fillInput(recvbuff, call.count, 0, call.dataSpec(), rank);
  } else {
    fillInput(sendbuff, call.count, 0, call.dataSpec(), rank);
    poisonOutput(recvbuff, call.count, call.type);
  }
}

std::int64_t allReduceCheck(const CollCall& call, int /*rank*/, const void* recvbuff,
                            bool /*inPlace*/) {
  return countWrongReduced(recvbuff, call.count, 0, call.dataSpec());
}

void allReduceBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                        double* busBw, int nranks) {
  double base = static_cast<double>(count * typeSize) / 1.0e9 / seconds;
  *algBw = base;
  // Each rank sends and receives 2(n-1)/n of the data in a ring: the bus bandwidth that makes
  // results comparable across rank counts.
  *busBw = base * (2.0 * (nranks - 1)) / nranks;
}

ncclResult_t allReduceRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                          std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                          ncclRedOp_t op, int /*root*/, ncclComm_t comm, cudaStream_t stream) {
  return ncclAllReduce(static_cast<char*>(sendbuff) + sendOffset,
                       static_cast<char*>(recvbuff) + recvOffset, count, type, op, comm, stream);
}

constexpr CollectiveTest kAllReduceTest = {
    "AllReduce",        allReduceByteCount, allReduceInitData, allReduceCheck,
    allReduceBandwidth, allReduceRun,       /*usesOp=*/true,   /*usesRoot=*/false,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kAllReduceTest);
}
