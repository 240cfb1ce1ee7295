// hypercube_perf: nccl-tests' HyperCube benchmark on Braid, with host buffers: an all-gather
// made of log2(n) pairwise exchanges, each its own ncclGroupStart/End of one send and one
// receive. In step k every rank swaps the 2^k blocks it holds with rank ^ 2^k. The size column
// is the gathered size; the count column is each rank's block. Rank counts that are not powers
// of two are skipped, as in nccl-tests.
//
// Each step sends what the previous one received, so the steps must not be merged into one
// group: run it with one rank per thread (-g 1) and -m 1.
//
//   braidrun -n 4 build/bench/hypercube_perf -b 8 -e 64M -f 2
//   build/bench/hypercube_perf -t 4 -b 8 -e 1M -f 4 -d all
#include <cstring>

#include "collective.h"
#include "datatypes.h"
#include "verifiable.h"

namespace braid::bench {
namespace {

void hypercubeByteCount(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                        std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                        std::size_t count, std::size_t eltSize, int nranks) {
  std::size_t block = (count / nranks) & ~(16 / eltSize - 1);  // 16-byte blocks, as nccl-tests
  *sendCount = block;
  *recvCount = block * nranks;
  *sendInplaceOffset = block;  // in place: rank r's block is already at recvbuff + r * block
  *recvInplaceOffset = 0;
  *paramCount = block;
}

void hypercubeInitData(const CollCall& call, int rank, void* sendbuff, void* recvbuff,
                       bool inPlace) {
  poisonOutput(recvbuff, call.recvCount, call.type);
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  void* input = inPlace ? static_cast<char*>(recvbuff) + rank * blockBytes : sendbuff;
  fillInput(input, call.count, 0, call.copiedSpec(rank), 0);
}

std::int64_t hypercubeCheck(const CollCall& call, int /*rank*/, const void* recvbuff,
                            bool /*inPlace*/) {
  std::size_t blockBytes = call.count * typeInfo(call.type).size;
  std::int64_t wrong = 0;
  for (int source = 0; source < call.nranks; ++source) {
    const void* block = static_cast<const char*>(recvbuff) + source * blockBytes;
    wrong += countWrongCopied(block, call.count, 0, call.copiedSpec(source), 0);
  }
  return wrong;
}

void hypercubeBandwidth(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                        double* busBw, int nranks) {
  // nccl-tests counts the n-1 blocks each rank receives; every byte crosses one link once.
  *algBw = static_cast<double>(count * typeSize * (nranks - 1)) / 1.0e9 / seconds;
  *busBw = *algBw;
}

ncclResult_t hypercubeRun(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                          std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                          ncclRedOp_t /*op*/, int /*root*/, ncclComm_t comm, cudaStream_t stream) {
  int nranks = 0, rank = 0;
  PERF_NCCL_RETURN(ncclCommCount(comm, &nranks));
  PERF_NCCL_RETURN(ncclCommUserRank(comm, &rank));
  const char* send = static_cast<const char*>(sendbuff) + sendOffset;
  char* recv = static_cast<char*>(recvbuff) + recvOffset;
  std::size_t blockBytes = count * typeInfo(type).size;
  char* own = recv + static_cast<std::size_t>(rank) * blockBytes;
  if (own != send) std::memcpy(own, send, blockBytes);
  for (int mask = 1; mask < nranks; mask <<= 1) {
    // Blocks [s, s + mask) are held; the peer holds [s ^ mask, (s ^ mask) + mask).
    std::size_t held = static_cast<std::size_t>(rank & ~(mask - 1));
    std::size_t missing = held ^ static_cast<std::size_t>(mask);
    PERF_NCCL_RETURN(ncclGroupStart());
    ncclResult_t sent =
        ncclSend(recv + held * blockBytes, count * mask, type, rank ^ mask, comm, stream);
    ncclResult_t received =
        ncclRecv(recv + missing * blockBytes, count * mask, type, rank ^ mask, comm, stream);
    ncclResult_t ended = ncclGroupEnd();
    if (sent != ncclSuccess) return sent;
    if (received != ncclSuccess) return received;
    if (ended != ncclSuccess) return ended;
  }
  return ncclSuccess;
}

const char* hypercubeUnsupportedRanks(int nranks) {
  return (nranks & (nranks - 1)) == 0 ? nullptr : "the rank count is not a power of 2: skipping";
}

constexpr CollectiveTest kHypercubeTest = {
    "HyperCube",           hypercubeByteCount,
    hypercubeInitData,     hypercubeCheck,
    hypercubeBandwidth,    hypercubeRun,
    /*usesOp=*/false,      /*usesRoot=*/false,
    InPlaceMode::kChecked, hypercubeUnsupportedRanks,
};

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  return braid::bench::perfMain(argc, argv, braid::bench::kHypercubeTest);
}
