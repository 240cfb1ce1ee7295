#include "fatal.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
  const char* slash = std::strrchr(file, '/');
  std::string callee(call, std::strcspn(call, "("));  // the function, without its arguments
  std::printf("%s: Test NCCL failure %s:%d '%s / %s' (%s on rank %d, pid %d)\n", hostname,
              slash ? slash + 1 : file, line, ncclGetErrorString(result),
              lastError ? lastError : "", callee.c_str(), rank, static_cast<int>(getpid()));
  exitNow(kTestNcclError);
}

}  // namespace braid::bench
