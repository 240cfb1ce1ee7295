// scatter_perf: nccl-tests' Scatter benchmark on Braid, with host buffers. The size column is
// the root's send size; the count column is each rank's block.
//
//   braidrun -n 4 build/bench/scatter_perf -b 8 -e 64M -f 2
//   build/bench/scatter_perf -t 4 -b 8 -e 1M -f 4 -d all -r -1
#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void scatterByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                      std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                      std::size_t count, std::size_t eltSize, int nranks) {
  std::size_t block = (count / nranks) & ~(16 / eltSize - 1);  // 16-byte blocks, as nccl-tests
  *recvCount = block;
  *sendCount = block * nranks;
  *sendInplaceOffset = 0;
  *recvInplaceOffset = block;  // in place: rank r receives at sendbuff + r * block
  *paramCount = block;
}

// The root's n blocks are one run of its copied data, block r = elements [r * count, ...).
void scatterInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff, bool inPlace) {
  std::size_t total = call.count * call.nranks;
  if (inPlace) {
    // One buffer holds the root's input and, at rank * count, every rank's output.
    if (rank == call.root) {
      fillInput(recvbuff, total, 0, call.copiedSpec(call.root), 0);
    } else {
      poisonOutput(recvbuff, total, call.type);
    }
    return;
  }
  if (rank == call.root) fillInput(sendbuff, total, 0, call.copiedSpec(call.root), 0);
  poisonOutput(recvbuff, call.count, call.type);
}

std::int64_t scatterCheck(const CollCall& call, int rank, const void* recvbuff, bool inPlace) {
  if (!inPlace) {
    return countWrongCopied(recvbuff, call.count, static_cast<std::size_t>(rank) * call.count,
                            call.copiedSpec(call.root), 0);
  }
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  std::int64_t wrong = 0;
  for (int block = 0; block < call.nranks; ++block) {
    const void* data = static_cast<const char*>(recvbuff) + block * blockBytes;
    if (rank == call.root || block == rank) {
      // The root's input is never overwritten; rank's own block is its output.
      wrong += countWrongCopied(data, call.count, static_cast<std::size_t>(block) * call.count,
                                call.copiedSpec(call.root), 0);
    } else {
      wrong += countOverwritten(data, call.count, call.type);
    }
  }
  return wrong;
}

void scatterBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                      double* busBw, int nranks) {
  // The root sends n blocks, n-1 of them over its link.
  double base = static_cast<double>(count * typeSize * nranks) / 1.0e9 / seconds;
  *algBw = base;
  *busBw = base * (nranks - 1) / nranks;
}

ncclResult_t scatterRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                        std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                        ncclRedOp_t /*op*/, int root, ncclComm_t comm, cudaStream_t stream) {
  return ncclScatter(static_cast<char*>(sendbuff) + sendOffset,
                     static_cast<char*>(recvbuff) + recvOffset, count, type, root, comm, stream);
}

constexpr CollectiveTest kScatterTest = {
    "Scatter",        scatterByteCount, scatterInitData,  scatterCheck,
    scatterBandwidth, scatterRun,       /*usesOp=*/false, /*usesRoot=*/true,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kScatterTest);
}
