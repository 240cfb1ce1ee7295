// reduce_scatter_perf: nccl-tests' ReduceScatter benchmark on Braid, with host buffers. The size
// column is the reduced (send) size; the count column is each rank's share of the result.
//
//   braidrun -n 4 build/bench/reduce_scatter_perf -b 8 -e 64M -f 2
//   build/bench/reduce_scatter_perf -t 4 -b 8 -e 1M -f 4 -o all -d all
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void reduceScatterByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                            std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                            std::size_t count, std::size_t eltSize, int nranks) {
  // A requested size is the reduced total; each rank's share is rounded down to 16 bytes, as
  // nccl-tests does.
  std::size_t block = (count / nranks) & ~(16 / eltSize - 1);
  *sendCount = block * nranks;
  *recvCount = block;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = block;  // in place: rank r's share lands at sendbuff + r * block
  *paramCount = block;
}

void reduceScatterInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                           bool inPlace) {
  // In place the output is a block of the input, so only out of place can it start poisoned.
  if (inPlace) {
    fillInput(recvbuff, call.sendCount, 0, call.dataSpec(), rank);
  } else {
    fillInput(sendbuff, call.sendCount, 0, call.dataSpec(), rank);
    poisonOutput(recvbuff, call.recvCount, call.type);
  }
}

std::int64_t reduceScatterCheck(const CollCall& call, int rank, const void* recvbuff,
                                bool inPlace) {
  // Rank r holds the reduction of elements [r * count, (r + 1) * count) of the inputs.
  std::size_t first = static_cast<std::size_t>(rank) * call.count;
  const char* output = static_cast<const char*>(recvbuff);
  if (inPlace) output += first * typeInfo(call.type).size;
  return countWrongReduced(output, call.count, first, call.dataSpec());
}

void reduceScatterBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                            double* busBw, int nranks) {
  // Bytes are the reduced total; each rank sends the (n-1)/n of it that others finish.
  double base = static_cast<double>(count * typeSize * nranks) / 1.0e9 / seconds;
  *algBw = base;
  *busBw = base * (nranks - 1) / nranks;
}

ncclResult_t reduceScatterRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                              std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                              ncclRedOp_t op, int /*root*/, ncclComm_t comm, cudaStream_t stream) {
  return ncclReduceScatter(static_cast<char*>(sendbuff) + sendOffset,
                           static_cast<char*>(recvbuff) + recvOffset, count, type, op, comm,
                           stream);
}

constexpr CollectiveTest kReduceScatterTest = {
    "ReduceScatter",        reduceScatterByteCount, reduceScatterInitData, reduceScatterCheck,
    reduceScatterBandwidth, reduceScatterRun,       /*usesOp=*/true,       /*usesRoot=*/false,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kReduceScatterTest);
}
