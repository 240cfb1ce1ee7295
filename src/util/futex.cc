#include "util/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace braid {

// Shared (not FUTEX_PRIVATE) futexes: the words may be in a segment mapped by several processes.
void futexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeoutNs) {
  struct timespec ts;
  ts.tv_sec = timeoutNs / 1000000000;
  ts.tv_nsec = timeoutNs % 1000000000;
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace braid
