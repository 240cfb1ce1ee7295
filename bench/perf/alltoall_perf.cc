// alltoall_perf: nccl-tests' AlltoAll benchmark on Braid, with host buffers. The size column is
// each rank's whole send (and receive) buffer, n blocks; the count column is one block.
// ncclAlltoAll has no in-place form, so the in-place columns show N/A.
//
//   braidrun -n 4 build/bench/alltoall_perf -b 8 -e 64M -f 2
//   build/bench/alltoall_perf -t 4 -b 8 -e 1M -f 4 -d all
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void alltoallByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                       std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                       std::size_t count, std::size_t eltSize, int nranks) {
  // A requested size is the whole buffer; each peer's block is rounded down to 16 bytes, as
  // nccl-tests does.
  std::size_t block = (count / nranks) & ~(16 / eltSize - 1);
  *paramCount = block;
  *sendCount = block * nranks;
  *recvCount = block * nranks;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = 0;
}

// Rank r's send buffer is one run of its copied data: the block for peer d is elements
// [d * count, (d + 1) * count). So a block from the wrong source or the wrong offset is counted.
void alltoallInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                      bool /*inPlace*/) {
  poisonOutput(recvbuff, call.recvCount, call.type);
  fillInput(sendbuff, call.sendCount, 0, call.copiedSpec(rank), 0);
}

std::int64_t alltoallCheck(const CollCall& call, int rank, const void* recvbuff, bool /*inPlace*/) {
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  std::int64_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    const void* block = static_cast<const char*>(recvbuff) + source * blockBytes;
    wrong += countWrongCopied(block, call.count, static_cast<std::size_t>(rank) * call.count,
                              call.copiedSpec(source), 0);
  }
  return wrong;
}

void alltoallBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                       double* busBw, int nranks) {
  // Each rank sends n blocks, n-1 of them over a link.
  double base = static_cast<double>(count * typeSize * nranks) / 1.0e9 / seconds;
  *algBw = base;
  *busBw = base * (nranks - 1) / nranks;
}

ncclResult_t alltoallRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                         std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                         ncclRedOp_t /*op*/, int /*root*/, ncclComm_t comm, cudaStream_t stream) {
  return ncclAlltoAll(static_cast<char*>(sendbuff) + sendOffset,
                      static_cast<char*>(recvbuff) + recvOffset, count, type, comm, stream);
}

constexpr CollectiveTest kAlltoallTest = {
    "AlltoAll",  alltoallByteCount, alltoallInitData,   alltoallCheck,        alltoallBandwidth,
    alltoallRun, /*usesOp=*/false,  /*usesRoot=*/false, InPlaceMode::kNotRun,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kAlltoallTest);
}
