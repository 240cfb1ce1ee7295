#include "fatal.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braid::bench {
namespace {

std::atomic<LaunchMode> gLaunchMode{LaunchMode::kSingleProcess};

}  // namespace

void setFatalLaunchMode(LaunchMode mode) {
  gLaunchMode.store(mode);
}

void exitNow(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (gLaunchMode.load() == LaunchMode::kMpi) mpiAbort(status);
  // _Exit: other threads may be blocked inside the library; no destructor may wait for them.
  std::_Exit(status);
}

void failNccl(ncclResult_t result, const char* call, const char* file, int line, int rank,
              ncclComm_t comm) {
  char hostname[1024] = {};
  gethostname(hostname, sizeof(hostname) - 1);
  if (char* dot = std::strchr(hostname, '.')) *dot = '\0';
  const char* lastError = ncclGetLastError(comm);
  std::printf("%s: Test NCCL failure %s:%d '%s / %s' (rank %d, pid %d, in %s)\n", hostname, file,
              line, ncclGetErrorString(result), lastError ? lastError : "", rank,
              static_cast<int>(getpid()), call);
  exitNow(kTestNcclError);
}

}  // namespace braid::bench
