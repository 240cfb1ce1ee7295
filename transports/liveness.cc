#include "transports/liveness.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/status.h"

namespace braid {

uint64_t processStartTime(int pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  // The command name may contain spaces: fields restart after the last ')'.
  char* p = strrchr(buf, ')');
  if (!p) return 0;
  p++;
  for (int field = 3; field < 22 && p; field++) p = strchr(p + 1, ' ');
  return p ? strtoull(p + 1, nullptr, 10) : 0;
}

ncclResult_t PidLiveness::check() {
  if (kill(pid_, 0) != 0 && errno == ESRCH)
    return fail(ncclRemoteError, "peer rank %d (pid %d) has exited", rank_, pid_);
  uint64_t now = processStartTime(pid_);
  if (startTime_ != 0 && now != 0 && now != startTime_)
    return fail(ncclRemoteError, "peer rank %d (pid %d) has exited (pid reused)", rank_, pid_);
  // A zombie still answers kill(): look at its state too.
  char path[64], buf[256];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid_);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n > 0) {
      buf[n] = 0;
      char* p = strrchr(buf, ')');
      if (p && (p[2] == 'Z' || p[2] == 'X'))
        return fail(ncclRemoteError, "peer rank %d (pid %d) has exited", rank_, pid_);
    }
  }
  return ncclSuccess;
}

}  // namespace braid
