// The receiving end of a TCP connection, with no thread of its own: whoever waits on its FIFO
// pulls the frames off the sockets (SlotPuller), so a message that arrives while the rank waits
// for it goes straight from the socket to the rank, with no hand-off between threads. While
// nobody waits, arriving data stays in the kernel's socket buffers; the sender's side keeps its
// own thread for what does not fit there (tcp_send_engine.h). Each socket is read a few KiB at a
// time into a read-ahead buffer, so a small frame (header and payload) takes one system call;
// large payloads go from the socket straight to their slot or claimed buffer.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "transports/connection_end.h"
#include "transports/fifo.h"
#include "transports/tcp/tcp_frames.h"
#include "util/wait.h"

namespace braid {

class TcpReceivePump : public SlotPuller, public LivenessCheck {
 public:
  /// `peerOnThisHost`: the sender runs on this host, so the core its packets were processed on
  /// is its own (loopback TCP processes them on the sending core) and tells whether it shares
  /// this rank's core.
  TcpReceivePump(std::vector<int> fds, uint32_t nslots, size_t slotBytes, int peer,
                 bool peerOnThisHost);
  ~TcpReceivePump() override;

  FifoControl* fifo() const { return end_.fifo(); }
  /// Moves every complete or partial frame the sockets hold into the FIFO, without blocking,
  /// until the sockets are empty or the FIFO is full. A failure closes the FIFO (check() says
  /// why).
  void pull() override;
  /// Sleeps until the socket the next frame comes on is readable, or for at most `ns`.
  void sleepFor(int64_t ns) override;
  /// The socket's last packet came from this thread's core (SO_INCOMING_CPU), the sender being
  /// on this host: two ranks the scheduler put on one core, which spinning would only delay.
  bool senderOnThisCore() override;
  /// ncclRemoteError once the sockets failed (peer closed, reset, malformed frame).
  ncclResult_t check() override { return end_.check(); }
  /// Shuts the sockets: nothing lands in the rank's buffers once this returns.
  void sever() override;
  int peerRank() const override { return end_.peer(); }

 private:
  /// Takes the current frame as far as the socket allows; true when it completed.
  ncclResult_t pullFrame(bool* completed);
  /// Bytes read from a socket beyond the frame in progress (the start of its next frames).
  struct ReadAhead {
    std::vector<char> bytes;
    size_t start = 0, end = 0;
    uint32_t reads = 0;  ///< reads that returned data (preferDelayedAcks is renewed by them)
  };
  /// Fills into[*got, want) from the socket's read-ahead, then the socket, without blocking.
  ncclResult_t take(size_t socket, void* into, size_t want, size_t* got, bool* wouldBlock);

  std::vector<int> fds_;
  std::vector<ReadAhead> ahead_;  ///< per socket (touched only while busy_ is held)
  ConnectionEnd end_;
  FifoSender filler_;
  std::atomic_flag busy_;  ///< held by the one thread pulling
  std::atomic<bool> severed_{false};
  const bool peerOnThisHost_;
  // The frame in progress (touched only while busy_ is held).
  std::atomic<uint32_t> frames_{0};  ///< frames completed: the next comes on fds_[frames_ % n]
  WireHeader header_{};
  size_t headerGot_ = 0;
  void* into_ = nullptr;  ///< where the payload goes: a slot, a claimed buffer or statusExtra_
  bool landing_ = false;  ///< into_ is the rank's claimed buffer
  size_t payloadGot_ = 0;
  uint64_t statusExtra_[kFifoStatusWords - 3] = {};
};

}  // namespace braid
