// Both ends of a connection over a net plugin (net_plugin.h). The algorithms see the same local
// FIFO as over TCP; each slot crosses as two plugin messages, in order: a 32-byte header (the
// slot's descriptor) and the payload, sent from and received into memory registered with the
// plugin once (the FIFO and a header array). Up to kNetSlotsInFlight slots are in flight per
// connection (two requests each, within what any plugin version allows).
//
// Sending: the rank posts into the FIFO; the posting thread hands the slot to the plugin at once
// when it can, and the connection's thread tests requests and hands over whatever the poster
// could not, so a rank never waits on the plugin while its peer is busy sending to it. The thread
// also completes the plugin's non-blocking connect, since a plugin may need the receiving side to
// make progress first.
// Receiving: no thread; whoever waits on the FIFO (SlotPuller) posts receives for free slots and
// publishes the slots whose header and payload have both landed, in order.
//
// Not carried: the sender's stall status (FifoSender::publishStatus), which TCP forwards as a
// frame of its own; receives are posted ahead in pairs, so a message of another shape cannot be
// told apart. A receiver stalled on a net connection reports a timeout without the peer's
// current operation.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "transports/connection_end.h"
#include "transports/fifo.h"
#include "transports/net/net_plugin.h"
#include "util/wait.h"

namespace braid {

constexpr uint32_t kNetSlotsInFlight = 4;

/// A slot's descriptor as it travels (its own message, before the payload).
struct NetHeader {
  SlotInfo info;
};

/// Registered memory and the requests of one slot position.
struct NetSlotRequests {
  void* header = nullptr;
  void* payload = nullptr;
  bool headerDone = false;
  bool payloadDone = false;
  int payloadBytes = 0;  ///< as test() reported
  bool complete() const { return headerDone && payloadDone; }
};

class NetSendEngine : public SlotPusher, public LivenessCheck {
 public:
  /// Connects to `handle` (the receiver's listen handle) on the connection's own thread.
  NetSendEngine(NetPlugin* net, int dev, const void* handle, uint32_t nslots, size_t slotBytes,
                int peer, double timeoutS, const std::atomic<uint32_t>* abort);
  ~NetSendEngine() override;

  FifoControl* fifo() const { return end_.fifo(); }
  void pushPosted(const SlotInfo& info) override;
  /// Waits (at most `seconds`; a short grace once `abort` is raised) until every posted slot has
  /// been delivered to the plugin and completed.
  void drain(double seconds, const std::atomic<uint32_t>* abort);
  ncclResult_t check() override { return end_.check(); }
  void sever() override;
  int peerRank() const override { return end_.peer(); }

 private:
  ncclResult_t connect();
  /// Hands posted slots to the plugin and tests those in flight (mutex_ held); *busy: something
  /// is still in flight.
  ncclResult_t progressLocked(bool* busy);
  void run();

  NetPlugin* net_;
  int dev_;
  unsigned char handle_[NCCL_NET_HANDLE_MAXSIZE];
  double timeoutS_;
  const std::atomic<uint32_t>* abort_;
  ConnectionEnd end_;
  FifoReceiver queue_;
  std::vector<NetHeader> headers_;
  std::mutex mutex_;  ///< held by whichever thread calls the plugin for this connection
  void* comm_ = nullptr;
  void* fifoMr_ = nullptr;
  void* headerMr_ = nullptr;
  std::atomic<bool> connected_{false};
  uint32_t issued_ = 0;        ///< slots whose two sends the plugin has taken
  bool headerIssued_ = false;  ///< slot issued_'s header is taken, its payload not yet
  NetSlotRequests inFlight_[kMaxFifoSlots];
  std::atomic<uint32_t> stop_{0};
  std::thread thread_;
};

class NetReceivePump : public SlotPuller, public LivenessCheck {
 public:
  NetReceivePump(NetPlugin* net, void* listenComm, uint32_t nslots, size_t slotBytes, int peer);
  ~NetReceivePump() override;

  /// Accepts the sender's connection (it connects on its own thread) and registers memory.
  ncclResult_t accept(double timeoutS, const std::atomic<uint32_t>* abort);
  FifoControl* fifo() const { return end_.fifo(); }
  void pull() override;
  void sleepFor(int64_t ns) override;
  ncclResult_t check() override { return end_.check(); }
  void sever() override;
  int peerRank() const override { return end_.peer(); }

 private:
  ncclResult_t pullLocked();

  NetPlugin* net_;
  void* listenComm_;
  ConnectionEnd end_;
  FifoSender filler_;
  std::vector<NetHeader> headers_;
  std::atomic_flag busy_;
  std::atomic<bool> severed_{false};
  void* comm_ = nullptr;
  void* fifoMr_ = nullptr;
  void* headerMr_ = nullptr;
  uint32_t posted_ = 0;        ///< slot positions whose two receives are posted
  bool headerPosted_ = false;  ///< position posted_'s header receive is posted, its payload not
  uint32_t published_ = 0;
  NetSlotRequests inFlight_[kMaxFifoSlots];
};

}  // namespace braid
