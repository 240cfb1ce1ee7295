// gather_perf: nccl-tests' Gather benchmark on Braid, with host buffers. The size column is the
// gathered (root's receive) size; the count column is each rank's contribution.
//
//   braidrun -n 4 build/bench/gather_perf -b 8 -e 64M -f 2
//   build/bench/gather_perf -t 4 -b 8 -e 1M -f 4 -d all -r -1
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void gatherByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                     std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                     std::size_t count, std::size_t eltSize, int nranks) {
  std::size_t block = (count / nranks) & ~(16 / eltSize - 1);  // 16-byte blocks, as nccl-tests
  *sendCount = block;
  *recvCount = block * nranks;
  *sendInplaceOffset = block;  // in place: rank r sends from recvbuff + r * block
  *recvInplaceOffset = 0;
  *paramCount = block;
}

void gatherInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff, bool inPlace) {
  // Every rank's receive buffer starts poisoned: the root's must be filled, the others' must
  // stay as they are (in place, apart from the rank's own input block).
  poisonOutput(recvbuff, call.recvCount, call.type);
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  void* input = inPlace ? static_cast<char*>(recvbuff) + rank * blockBytes : sendbuff;
  fillInput(input, call.count, 0, call.copiedSpec(rank), 0);
}

std::int64_t gatherCheck(const CollCall& call, int rank, const void* recvbuff, bool inPlace) {
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  std::int64_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    const void* block = static_cast<const char*>(recvbuff) + source * blockBytes;
    if (rank == call.root || (inPlace && source == rank)) {
      wrong += countWrongCopied(block, call.count, 0, call.copiedSpec(source), 0);
    } else {
      wrong += countOverwritten(block, call.count, call.type);
    }
  }
  return wrong;
}

void gatherBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                     double* busBw, int nranks) {
  // The root receives n blocks, n-1 of them over its link.
  double base = static_cast<double>(count * typeSize * nranks) / 1.0e9 / seconds;
  *algBw = base;
  *busBw = base * (nranks - 1) / nranks;
}

ncclResult_t gatherRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                       std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                       ncclRedOp_t /*op*/, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclGather(static_cast<char*>(sendbuff) + sendOffset,
                    static_cast<char*>(recvbuff) + recvOffset, count, type, root, comm, stream);
}

constexpr CollectiveTest kGatherTest = {
    "Gather",        gatherByteCount, gatherInitData,   gatherCheck,
    gatherBandwidth, gatherRun,       /*usesOp=*/false, /*usesRoot=*/true,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kGatherTest);
}
