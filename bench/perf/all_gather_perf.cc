// all_gather_perf: nccl-tests' AllGather benchmark on Braid, with host buffers. The size column
// is the gathered (receive) size; the count column is each rank's contribution.
//
//   braidrun -n 4 build/bench/all_gather_perf -b 8 -e 64M -f 2
//   build/bench/all_gather_perf -t 4 -b 8 -e 1M -f 4 -d all
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void allGatherByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                        std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                        std::size_t count, std::size_t eltSize, int nranks) {
  // A requested size is the gathered total; each rank's block is rounded down to 16 bytes, as
  // nccl-tests does.
  std::size_t block = (count / nranks) & ~(16 / eltSize - 1);
  *sendCount = block;
  *recvCount = block * nranks;
  *sendInplaceOffset = block;  // in place: rank r sends from recvbuff + r * block
  *recvInplaceOffset = 0;
  *paramCount = block;
}

void allGatherInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                       bool inPlace) {
  // The whole output starts poisoned, then in place the rank's own block is its input.
  poisonOutput(recvbuff, call.recvCount, call.type);
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  void* input = inPlace ? static_cast<char*>(recvbuff) + rank * blockBytes : sendbuff;
  fillInput(input, call.count, 0, call.copiedSpec(rank), 0);
}

std::int64_t allGatherCheck(const CollCall& call, int /*rank*/, const void* recvbuff,
                            bool /*inPlace*/) {
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  std::int64_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    const void* block = static_cast<const char*>(recvbuff) + source * blockBytes;
    wrong += countWrongCopied(block, call.count, 0, call.copiedSpec(source), 0);
  }
  return wrong;
}

void allGatherBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                        double* busBw, int nranks) {
  // Bytes are the gathered total; each rank receives the (n-1)/n of it it did not have.
  double base = static_cast<double>(count * typeSize * nranks) / 1.0e9 / seconds;
  *algBw = base;
  *busBw = base * (nranks - 1) / nranks;
}

ncclResult_t allGatherRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                          std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                          ncclRedOp_t /*op*/, int /*root*/, ncclComm_t comm, cudaStream_t stream) {
  return ncclAllGather(static_cast<char*>(sendbuff) + sendOffset,
                       static_cast<char*>(recvbuff) + recvOffset, count, type, comm, stream);
}

constexpr CollectiveTest kAllGatherTest = {
    "AllGather",        allGatherByteCount, allGatherInitData, allGatherCheck,
    allGatherBandwidth, allGatherRun,       /*usesOp=*/false,  /*usesRoot=*/false,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kAllGatherTest);
}
