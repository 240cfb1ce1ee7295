// What a *_perf program tells the shared harness about its collective, after nccl-tests'
// testColl/testEngine: buffer sizes, data setup, the call itself, its check, and its bandwidth.
// A new collective test is one of these plus `return perfMain(argc, argv, kMyTest);`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"
#include "verifiable.h"

/// Returns a failed NCCL call's result from a runColl made of several calls (the harness then
/// reports it and ends the process).
#define PERF_NCCL_RETURN(call)                          \
  do {                                                  \
    ncclResult_t perfResult_ = (call);                  \
    if (perfResult_ != ncclSuccess) return perfResult_; \
  } while (0)

namespace braid::bench {

/// One measured call: its type, op, root, rank count and (in elements) its buffer geometry.
struct CollCall {
  ncclDataType_t type = ncclFloat32;
  int opIndex = 0;  ///< index into kOpNames; kOpMulSum uses a per-rank premul-sum op
  int root = -1;
  int nranks = 1;
  std::size_t count = 0;              ///< the count argument of the collective
  std::size_t sendCount = 0;          ///< elements in each rank's send buffer
  std::size_t recvCount = 0;          ///< elements in each rank's receive buffer
  std::size_t sendInplaceOffset = 0;  ///< in-place: input at recvbuff + rank * this
  std::size_t recvInplaceOffset = 0;  ///< in-place: output at recvbuff + rank * this
  std::uint64_t seed = 0;             ///< changes between checked runs

  DataSpec dataSpec() const { return {type, opIndex, nranks, seed}; }

  /// The data of sourceRank for collectives that move values unchanged (broadcast,
  /// all-gather), written and checked as rank 0 of this spec. Nothing is summed, so each block
  /// spans the type's whole exact range, and every (seed, source) pair has its own values: a
  /// block taken from the wrong rank, offset or run is counted.
  DataSpec copiedSpec(int sourceRank) const {
    return {type, ncclSum, /*nranks=*/1,
            seed * static_cast<std::uint64_t>(nranks) + static_cast<std::uint64_t>(sourceRank)};
  }
};

/// What the in-place half of a size's line does, for collectives whose in-place form NCCL does
/// not define (AlltoAll) or whose in-place result is a race (send and receive in one buffer).
enum class InPlaceMode {
  kChecked,    ///< timed and checked, like the out-of-place half
  kUnchecked,  ///< timed; #wrong shows N/A (nccl-tests does not report its errors either)
  kNotRun,     ///< not run: every column shows N/A
};

struct CollectiveTest {
  const char* name;
  /// nccl-tests' getCollByteCount: element counts of a call for a requested `count`.
  void (*getCollByteCount)(std::size_t* sendCount, std::size_t* recvCount, std::size_t* paramCount,
                           std::size_t* sendInplaceOffset, std::size_t* recvInplaceOffset,
                           std::size_t count, std::size_t eltSize, int nranks);
  /// Writes rank's input (into recvbuff for in-place calls) and poisons its output.
  void (*initData)(const CollCall& call, int rank, void* sendbuff, void* recvbuff, bool inPlace);
  /// Counts the wrong elements of rank's output after the call.
  std::int64_t (*check)(const CollCall& call, int rank, const void* recvbuff, bool inPlace);
  /// Algorithm and bus bandwidth (GB/s) of a call on count elements that took `seconds`.
  void (*getBw)(std::size_t count, std::size_t typeSize, double seconds, double* algBw,
                double* busBw, int nranks);
  /// Issues the collective; offsets are in bytes from the buffers.
  ncclResult_t (*runColl)(void* sendbuff, std::size_t sendOffset, void* recvbuff,
                          std::size_t recvOffset, std::size_t count, ncclDataType_t type,
                          ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
  bool usesOp;    ///< runs every -o op; otherwise the op column says "none"
  bool usesRoot;  ///< -r -1 runs every root in turn; otherwise the root column says -1
  InPlaceMode inPlace = InPlaceMode::kChecked;
  /// Why the test cannot run at this rank count (nullptr: it can); the run prints the reason
  /// and no lines, as nccl-tests' hypercube does for rank counts that are not powers of two.
  const char* (*unsupportedRanks)(int nranks) = nullptr;
};

/// Runs a perf test: parses nccl-tests' flags, sets up ranks (threads, mpirun or braidrun),
/// measures, checks and reports. Returns the process exit status.
int perfMain(int argc, char** argv, const CollectiveTest& test);

}  // namespace braid::bench
