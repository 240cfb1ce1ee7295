// A TCP connection's proxy thread: it drains a local FIFO into sockets (send side) or fills a
// local FIFO from sockets (receive side). Slot k travels on socket k % nsockets, with a 32-byte
// header (SlotInfo: bytes, tag, operation fingerprint); both sides walk the slots in the same
// order, so no reordering is needed.
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "transports/fifo.h"
#include "util/wait.h"

namespace braid {

class TcpProxy : public LivenessCheck {
 public:
  enum Direction { kSend, kReceive };
  TcpProxy(Direction dir, std::vector<int> fds, uint32_t nslots, size_t slotBytes, int peer);
  ~TcpProxy() override;

  FifoControl* fifo() const { return fifo_; }
  /// Send side: waits (at most `seconds`; 0.1 s once `abort` is raised) until every posted slot
  /// is on the wire.
  void drain(double seconds, const std::atomic<uint32_t>* abort);
  /// ncclRemoteError once the socket side failed (peer closed, reset, unreachable).
  ncclResult_t check() override;
  /// Stops the thread and shuts the sockets: the connection is dead from here on (lent memory,
  /// fifo.h: FifoSender::postLent, is never touched again).
  void sever() override;

 private:
  void run();
  ncclResult_t sendLoop();
  ncclResult_t receiveLoop();

  Direction dir_;
  std::vector<int> fds_;
  void* mem_ = nullptr;
  FifoControl* fifo_ = nullptr;
  int peer_;
  std::atomic<uint32_t> stop_{0};
  std::atomic<bool> failed_{false};
  std::string failure_;
  std::thread thread_;
};

}  // namespace braid
