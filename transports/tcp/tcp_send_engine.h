// The sending end of a TCP connection. The rank posts slots into a local FIFO; a slot of at most
// `inlineBytes` posted while nothing else is queued leaves at once from the posting thread
// (SlotPusher), with no hand-off between threads. Whatever does not leave that way (larger
// slots, or a socket without room) is sent by the connection's thread, which waits on the FIFO
// and on the sockets, so the rank never blocks on a peer that is busy sending to it (a ring's
// ranks all send before they receive).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transports/connection_end.h"
#include "transports/fifo.h"
#include "transports/tcp/tcp_frames.h"
#include "util/wait.h"

namespace braid {

class TcpSendEngine : public SlotPusher, public LivenessCheck {
 public:
  TcpSendEngine(std::vector<int> fds, uint32_t nslots, size_t slotBytes, size_t inlineBytes,
                int peer);
  ~TcpSendEngine() override;

  FifoControl* fifo() const { return end_.fifo(); }
  void pushPosted(const SlotInfo& info) override;
  /// Waits (at most `seconds`; 0.1 s once `abort` is raised) until every posted slot is on the
  /// wire.
  void drain(double seconds, const std::atomic<uint32_t>* abort);
  /// ncclRemoteError once the sockets failed (peer closed, reset, unreachable).
  ncclResult_t check() override { return end_.check(); }
  /// Stops the thread and shuts the sockets: the connection is dead from here on (lent memory,
  /// fifo.h: FifoSender::postLent, is never touched again).
  void sever() override;
  int peerRank() const override { return end_.peer(); }

 private:
  enum class Push { kIdle, kBlocked, kFailed };
  /// Sends queued frames until none is left or a socket has no room (mutex_ held).
  Push pushLocked();
  void run();
  ncclResult_t sendLoop();

  std::vector<int> fds_;
  ConnectionEnd end_;
  size_t inlineBytes_;
  std::mutex mutex_;  ///< held by whichever thread sends: the poster or the connection's
  FifoReceiver queue_;
  // The frame in progress (mutex_).
  size_t frames_ = 0;  ///< frames completed: the next goes on fds_[frames_ % n]
  bool inFrame_ = false;
  bool frameIsSlot_ = false;
  WireHeader header_{};
  const void* payload_ = nullptr;
  size_t sent_ = 0;
  uint64_t statusExtra_[kFifoStatusWords - 3] = {};
  std::atomic<uint32_t> statusSent_{0};
  int blockedFd_ = -1;
  /// Something queued is the thread's to send: the poster left a slot (too large, not alone,
  /// the lock taken, or the socket full), or the thread's own push met a full socket.
  std::atomic<bool> handoff_{false};
  std::atomic<uint32_t> stop_{0};
  std::thread thread_;
};

}  // namespace braid
