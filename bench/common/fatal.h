// Failure exits of the perf tests. A rank that fails cannot leave its peers blocked in a
// collective, so failures end the whole process at once (and, under mpirun, the whole job;
// braidrun stops the other processes itself), with nccl-tests' exit statuses.
#pragma once

#include "launch_env.h"
#include "nccl.h"

namespace braid::bench {

/// nccl-tests' testResult_t values, used as exit statuses.
enum TestResult {
  kTestSuccess = 0,
  kTestInternalError = 1,
  kTestNcclError = 3,
  kTestTimeout = 4,
  kTestInvalidUsage = 6,
  kTestNumResults = 7,  ///< data errors or a missed NCCL_TESTS_MIN_BW
};

/// Tells the fatal paths how to stop the other processes (MPI_Abort under mpirun).
void setFatalLaunchMode(LaunchMode mode);

/// Flushes output and ends the process (the job under MPI) with status.
[[noreturn]] void exitNow(int status);

/// Reports a failed NCCL call like nccl-tests ("<host>: Test NCCL failure <file>:<line>
/// '<error string> / <last error>'"), naming the rank, then ends the process with status 3.
[[noreturn]] void failNccl(ncclResult_t result, const char* call, const char* file, int line,
                           int rank, ncclComm_t comm);

}  // namespace braid::bench

/// Runs an NCCL call; any result but ncclSuccess ends the process (see failNccl).
#define PERF_NCCL_CHECK(call, rank, comm)                                               \
  do {                                                                                  \
    ncclResult_t perfResult_ = (call);                                                  \
    if (perfResult_ != ncclSuccess) {                                                   \
      ::braid::bench::failNccl(perfResult_, #call, __FILE__, __LINE__, (rank), (comm)); \
    }                                                                                   \
  } while (0)
