#include "transports/tcp/tcp_receive_pump.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/log.h"
#include "util/socket.h"
#include "util/status.h"

namespace braid {
namespace {
// Read-ahead per socket: a small frame's header and payload arrive in one read. A rest of a
// payload longer than half of it is read straight into its destination instead.
constexpr size_t kReadAheadBytes = 8192;
// A connection's sockets carry its data one way only, so the kernel never sees them as
// interactive (sending soon after receiving) and acknowledges every small segment at once: a
// segment of its own, built and (over loopback) delivered inside the read that took the data,
// on the rank's critical path; a socket that carries data both ways (Open MPI's) sends its ACKs
// with that data. With quick ACKs off (preferDelayedAcks) the socket acknowledges every second
// small segment, and full-sized ones as before (every second one). The kernel turns quick ACKs
// back on after a pause in the traffic, so every this many reads renew the setting. Measured:
// 8-byte allreduce at 2 ranks over loopback, 4 segments a call -> 3, 8.6 -> 7.6 us pinned.
constexpr uint32_t kDelayedAckRenewReads = 64;
}  // namespace

TcpReceivePump::TcpReceivePump(std::vector<int> fds, uint32_t nslots, size_t slotBytes, int peer,
                               bool peerOnThisHost)
    : fds_(std::move(fds)),
      ahead_(fds_.size()),
      end_("TCP", "from", peer, nslots, slotBytes),
      peerOnThisHost_(peerOnThisHost) {
  for (ReadAhead& a : ahead_) a.bytes.resize(kReadAheadBytes);
  filler_.attach(end_.fifo(), nullptr);
}

TcpReceivePump::~TcpReceivePump() {
  sever();
  for (int& fd : fds_) closeFd(fd);
}

void TcpReceivePump::sever() {
  severed_.store(true);
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  end_.fifo()->closed.store(1);
  futexWakeAll(&end_.fifo()->head);
  // A thread pulling right now may be landing into the rank's buffer: wait for it to stop.
  while (busy_.test_and_set(std::memory_order_acquire)) sched_yield();
  busy_.clear(std::memory_order_release);
}

void TcpReceivePump::pull() {
  if (end_.failed() || severed_.load(std::memory_order_relaxed)) return;
  if (busy_.test_and_set(std::memory_order_acquire)) return;  // another thread is pulling
  // A failure found here is the connection's: kept with it (markFailed) for whoever waits on
  // it, not the last error of the call this thread is in, which may be about another connection
  // or about a frame that arrived just before its peer finished and closed.
  ErrorCapture connectionError;
  while (!severed_.load(std::memory_order_relaxed)) {
    bool completed = false;
    if (pullFrame(&completed) != ncclSuccess) {
      if (!severed_.load()) end_.markFailed();
      break;
    }
    if (!completed) break;
  }
  busy_.clear(std::memory_order_release);
}

void TcpReceivePump::sleepFor(int64_t ns) {
  if (end_.failed() || severed_.load()) return;
  // (Bytes in the read-ahead are taken by the pull before any wait sleeps: a wait sleeps only
  // when its FIFO is empty, and then the pull had room for them.)
  pollfd p{fds_[frames_.load(std::memory_order_relaxed) % fds_.size()], POLLIN, 0};
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  ppoll(&p, 1, &ts, nullptr);
}

bool TcpReceivePump::senderOnThisCore() {
  if (!peerOnThisHost_) return false;
  int cpu = -1;
  socklen_t len = sizeof(cpu);
  const int fd = fds_[frames_.load(std::memory_order_relaxed) % fds_.size()];
  return getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) == 0 && cpu >= 0 &&
         static_cast<uint32_t>(cpu) == currentCpu();
}

ncclResult_t TcpReceivePump::take(size_t socket, void* into, size_t want, size_t* got,
                                  bool* wouldBlock) {
  ReadAhead& a = ahead_[socket];
  const int fd = fds_[socket];
  while (*got < want) {
    if (a.end > a.start) {
      const size_t n = std::min(a.end - a.start, want - *got);
      memcpy(static_cast<char*>(into) + *got, a.bytes.data() + a.start, n);
      a.start += n;
      *got += n;
      continue;
    }
    a.start = a.end = 0;
    const size_t rest = want - *got;
    const bool direct = rest > kReadAheadBytes / 2;
    ssize_t n = direct ? recv(fd, static_cast<char*>(into) + *got, rest, MSG_DONTWAIT)
                       : recv(fd, a.bytes.data(), a.bytes.size(), MSG_DONTWAIT);
    if (n > 0) {
      if (a.reads++ % kDelayedAckRenewReads == 0) preferDelayedAcks(fd);
      if (direct)
        *got += static_cast<size_t>(n);
      else
        a.end = static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return fail(ncclRemoteError, "recv: connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      *wouldBlock = true;
      return ncclSuccess;
    }
    return fail(ncclRemoteError, "recv: %s", strerror(errno));
  }
  return ncclSuccess;
}

ncclResult_t TcpReceivePump::pullFrame(bool* completed) {
  const size_t socket = frames_.load(std::memory_order_relaxed) % fds_.size();
  bool wouldBlock = false;
  if (headerGot_ < sizeof(header_)) {
    BRAID_TRY(take(socket, &header_, sizeof(header_), &headerGot_, &wouldBlock));
    if (wouldBlock) return ncclSuccess;
  }
  const bool status = header_.tag == kStatusFrameTag && header_.bytes == kStatusExtraBytes;
  if (!into_) {
    if (status) {
      into_ = statusExtra_;
    } else {
      if (header_.bytes > filler_.slotBytes())
        return fail(ncclRemoteError, "malformed frame: %u bytes in a %zu-byte slot", header_.bytes,
                    filler_.slotBytes());
      void* slot;
      if (!filler_.tryAcquire(&slot)) return ncclSuccess;  // full: the rank takes a slot first
      end_.slotFilling(header_.bytes);
      // A claimed position lands in the rank's buffer when the header is the one it expects
      // (fifo.h: FifoReceiver::claim); anything else goes to the slot, where the rank sees the
      // mismatch as usual.
      const uint32_t k = filler_.posted() % end_.fifo()->nslots;
      into_ = slot;
      if (end_.fifo()->landing[k].exchange(kLandBusy, std::memory_order_acq_rel) == kLandClaimed) {
        const LandingClaim& c = end_.fifo()->claims[k];
        if (c.position == filler_.posted() && c.bytes == header_.bytes &&
            memcmp(c.op, header_.op, sizeof(c.op)) == 0) {
          into_ = c.dst;
          landing_ = true;
        }
      }
      if (!landing_) end_.fifo()->landing[k].store(kLandInSlot, std::memory_order_release);
    }
  }
  BRAID_TRY(take(socket, into_, header_.bytes, &payloadGot_, &wouldBlock));
  if (wouldBlock) return ncclSuccess;
  if (status) {
    uint64_t words[kFifoStatusWords];
    memcpy(words, header_.op, sizeof(header_.op));
    memcpy(words + 3, statusExtra_, sizeof(statusExtra_));
    fifoWriteStatus(end_.fifo(), words);
  } else {
    if (landing_)
      end_.fifo()->landing[filler_.posted() % end_.fifo()->nslots].store(kLandLanded,
                                                                         std::memory_order_release);
    filler_.post(header_);
  }
  headerGot_ = 0;
  payloadGot_ = 0;
  into_ = nullptr;
  landing_ = false;
  frames_.store(frames_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  *completed = true;
  return ncclSuccess;
}

}  // namespace braid
