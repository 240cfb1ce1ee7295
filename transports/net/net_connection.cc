#include "transports/net/net_connection.h"

#include <sched.h>

#include <chrono>
#include <cstring>

#include "util/clock.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr int kNetTag = 0x4272;  // one stream per connection: the tag only has to match
constexpr int kYieldsBeforeSleep = 64;
constexpr auto kPollSleep = std::chrono::microseconds(20);

std::string label(const NetPlugin* net) {
  return std::string("NET/") + net->name();
}

// Tests one request of a slot; a finished request is freed by the plugin and forgotten here.
ncclResult_t testOne(NetPlugin* net, void** request, bool* done, int* bytes) {
  if (*done || !*request) return ncclSuccess;
  int finished = 0, size = 0;
  if (ncclResult_t r = net->test(*request, &finished, &size); r != ncclSuccess) {
    *request = nullptr;  // a failed request may be gone: never touched again
    return fail(r, "the plugin's test returned %s", ncclGetErrorString(r));
  }
  if (finished) {
    *done = true;
    *request = nullptr;
    if (bytes) *bytes = size;
  }
  return ncclSuccess;
}

// Tests the requests of the slot positions [from, end) (each slot's header and payload).
ncclResult_t testSlots(NetPlugin* net, NetSlotRequests* inFlight, uint32_t nslots, uint32_t from,
                       uint32_t end) {
  for (uint32_t p = from; p != end; p++) {
    NetSlotRequests& s = inFlight[p % nslots];
    BRAID_TRY(testOne(net, &s.header, &s.headerDone, nullptr));
    BRAID_TRY(testOne(net, &s.payload, &s.payloadDone, &s.payloadBytes));
  }
  return ncclSuccess;
}

// Waits for a non-blocking connect or accept: `step` returns true once done.
template <class Step>
ncclResult_t untilConnected(const char* what, int peer, double timeoutS,
                            const std::atomic<uint32_t>* abort, const std::atomic<uint32_t>* stop,
                            Step step) {
  Deadline deadline = Deadline::after(timeoutS);
  for (int round = 0;; round++) {
    bool done = false;
    BRAID_TRY(step(&done));
    if (done) return ncclSuccess;
    if ((abort && abort->load()) || (stop && stop->load()))
      return fail(ncclInternalError, "%s rank %d: abandoned (communicator aborted or closed)", what,
                  peer);
    if (deadline.expired())
      return fail(ncclRemoteError, "%s rank %d: not connected after %g s (BRAID_TIMEOUT_S)", what,
                  peer, timeoutS);
    if (round < kYieldsBeforeSleep)
      sched_yield();
    else
      std::this_thread::sleep_for(kPollSleep);
  }
}

// Registers a connection's FIFO (control block and slots) and its header array on `comm`.
ncclResult_t registerMemory(NetPlugin* net, void* comm, const ConnectionEnd& end,
                            std::vector<NetHeader>& headers, const char* direction, void** fifoMr,
                            void** headerMr) {
  FifoControl* c = end.fifo();
  if (ncclResult_t r = net->regMr(comm, c, fifoBytes(c->nslots, c->slotBytes), fifoMr);
      r != ncclSuccess)
    return fail(r, "%s: regMr of the FIFO (%s rank %d) returned %s", label(net).c_str(), direction,
                end.peer(), ncclGetErrorString(r));
  if (ncclResult_t r =
          net->regMr(comm, headers.data(), headers.size() * sizeof(NetHeader), headerMr);
      r != ncclSuccess)
    return fail(r, "%s: regMr of the headers (%s rank %d) returned %s", label(net).c_str(),
                direction, end.peer(), ncclGetErrorString(r));
  return ncclSuccess;
}

}  // namespace

// ---- sending end ----

NetSendEngine::NetSendEngine(NetPlugin* net, int dev, const void* handle, uint32_t nslots,
                             size_t slotBytes, int peer, double timeoutS,
                             const std::atomic<uint32_t>* abort)
    : net_(net),
      dev_(dev),
      timeoutS_(timeoutS),
      abort_(abort),
      end_(label(net), "to", peer, nslots, slotBytes),
      headers_(nslots) {
  memcpy(handle_, handle, sizeof(handle_));
  queue_.attach(end_.fifo(), nullptr);
  thread_ = std::thread([this] { run(); });
}

NetSendEngine::~NetSendEngine() {
  sever();
  if (comm_) {
    if (fifoMr_) net_->deregMr(comm_, fifoMr_);
    if (headerMr_) net_->deregMr(comm_, headerMr_);
    net_->closeSend(comm_);
  }
}

void NetSendEngine::sever() {
  stop_.store(1);
  end_.fifo()->closed.store(1);
  futexWakeAll(&end_.fifo()->head);
  futexWakeAll(&end_.fifo()->tail);
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);  // a poster in the plugin right now finishes first
}

ncclResult_t NetSendEngine::connect() {
  void* comm = nullptr;
  const std::string what = label(net_) + " connect to";
  BRAID_TRY(untilConnected(what.c_str(), end_.peer(), timeoutS_, abort_, &stop_, [&](bool* done) {
    if (ncclResult_t r = net_->connect(dev_, handle_, &comm); r != ncclSuccess)
      return fail(r, "%s rank %d: the plugin's connect returned %s", what.c_str(), end_.peer(),
                  ncclGetErrorString(r));
    *done = comm != nullptr;
    return ncclSuccess;
  }));
  std::lock_guard<std::mutex> lock(mutex_);
  comm_ = comm;
  BRAID_TRY(registerMemory(net_, comm_, end_, headers_, "to", &fifoMr_, &headerMr_));
  connected_.store(true);
  return ncclSuccess;
}

ncclResult_t NetSendEngine::progressLocked(bool* busy) {
  // After a failure the plugin's state for this connection is not to be trusted (a failed
  // request may be freed): whoever comes next only reports it.
  BRAID_TRY(end_.check());
  FifoControl* c = end_.fifo();
  const uint32_t nslots = c->nslots;
  const uint32_t head = c->head.load(std::memory_order_acquire);
  uint32_t released = queue_.position();
  while (issued_ != head && issued_ - released < kNetSlotsInFlight && !stop_.load()) {
    const uint32_t k = issued_ % nslots;
    NetSlotRequests& s = inFlight_[k];
    if (!headerIssued_) {
      s = NetSlotRequests{};
      headers_[k].info = c->info[k];
      if (ncclResult_t r =
              net_->isend(comm_, &headers_[k], sizeof(NetHeader), kNetTag, headerMr_, &s.header);
          r != ncclSuccess)
        return fail(r, "%s: isend to rank %d returned %s", label(net_).c_str(), end_.peer(),
                    ncclGetErrorString(r));
      if (!s.header) break;  // the plugin cannot take it now
      headerIssued_ = true;
    }
    char* slot = fifoSlots(c) + static_cast<size_t>(k) * c->slotBytes;
    if (ncclResult_t r =
            net_->isend(comm_, slot, headers_[k].info.bytes, kNetTag, fifoMr_, &s.payload);
        r != ncclSuccess)
      return fail(r, "%s: isend to rank %d returned %s", label(net_).c_str(), end_.peer(),
                  ncclGetErrorString(r));
    if (!s.payload) break;
    headerIssued_ = false;
    issued_++;
  }
  if (testSlots(net_, inFlight_, nslots, released, issued_ + (headerIssued_ ? 1 : 0)) !=
      ncclSuccess)
    return addContext(ncclRemoteError, "%s: sending to rank %d", label(net_).c_str(), end_.peer());
  while (released != issued_ && inFlight_[released % nslots].complete()) {
    queue_.release();
    released++;
  }
  *busy = released != head;
  return ncclSuccess;
}

void NetSendEngine::pushPosted(const SlotInfo&) {
  FifoControl* c = end_.fifo();
  if (connected_.load(std::memory_order_acquire) && !stop_.load() && !end_.failed() &&
      mutex_.try_lock()) {
    bool busy = false;
    const ncclResult_t r = progressLocked(&busy);
    // Marked before anyone else may call the plugin for this connection.
    if (r != ncclSuccess && !end_.failed()) end_.markFailed();
    mutex_.unlock();
    if (r != ncclSuccess) return;
  }
  // The thread tests what is in flight until it completes.
  notify(WakeWord{&c->head, &c->headSleepers});
}

void NetSendEngine::run() {
  if (connect() != ncclSuccess) {
    if (!stop_.load()) end_.markFailed();
    return;
  }
  FifoControl* c = end_.fifo();
  WaitPolicy policy{64, 0, &stop_};
  int idleRounds = 0;
  while (!stop_.load()) {
    auto ready = [c, this] {
      return c->head.load() != c->tail.load() || c->closed.load() != 0 || stop_.load() != 0;
    };
    if (waitUntil(policy, WakeWord{&c->head, &c->headSleepers}, ready, nullptr,
                  "waiting for a slot to send") != ncclSuccess ||
        stop_.load())
      return;
    bool busy = false;
    ncclResult_t r;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      r = progressLocked(&busy);
      if (r != ncclSuccess && !stop_.load() && !end_.failed()) end_.markFailed();
    }
    if (r != ncclSuccess) return;
    // Requests in flight: poll them, yielding the core, then in short sleeps.
    idleRounds = busy ? idleRounds + 1 : 0;
    if (idleRounds > kYieldsBeforeSleep)
      std::this_thread::sleep_for(kPollSleep);
    else if (busy)
      sched_yield();
  }
}

void NetSendEngine::drain(double seconds, const std::atomic<uint32_t>* abort) {
  end_.drain(seconds, abort, stop_);
}

// ---- receiving end ----

NetReceivePump::NetReceivePump(NetPlugin* net, void* listenComm, uint32_t nslots, size_t slotBytes,
                               int peer)
    : net_(net),
      listenComm_(listenComm),
      end_(label(net), "from", peer, nslots, slotBytes),
      headers_(nslots) {
  filler_.attach(end_.fifo(), nullptr);
}

NetReceivePump::~NetReceivePump() {
  sever();
  if (comm_) {
    if (fifoMr_) net_->deregMr(comm_, fifoMr_);
    if (headerMr_) net_->deregMr(comm_, headerMr_);
    net_->closeRecv(comm_);
  }
  if (listenComm_) net_->closeListen(listenComm_);
}

ncclResult_t NetReceivePump::accept(double timeoutS, const std::atomic<uint32_t>* abort) {
  void* comm = nullptr;
  const std::string what = label(net_) + " accept from";
  BRAID_TRY(untilConnected(what.c_str(), end_.peer(), timeoutS, abort, nullptr, [&](bool* done) {
    if (ncclResult_t r = net_->accept(listenComm_, &comm); r != ncclSuccess)
      return fail(r, "%s rank %d: the plugin's accept returned %s", what.c_str(), end_.peer(),
                  ncclGetErrorString(r));
    *done = comm != nullptr;
    return ncclSuccess;
  }));
  comm_ = comm;
  net_->closeListen(listenComm_);
  listenComm_ = nullptr;
  return registerMemory(net_, comm_, end_, headers_, "from", &fifoMr_, &headerMr_);
}

void NetReceivePump::sever() {
  severed_.store(true);
  end_.fifo()->closed.store(1);
  futexWakeAll(&end_.fifo()->head);
  while (busy_.test_and_set(std::memory_order_acquire)) sched_yield();
  busy_.clear(std::memory_order_release);
}

void NetReceivePump::pull() {
  if (!comm_ || end_.failed() || severed_.load(std::memory_order_relaxed)) return;
  if (busy_.test_and_set(std::memory_order_acquire)) return;  // another thread is pulling
  ErrorCapture connectionError;  // the connection's failure, not the call's (TcpReceivePump::pull)
  if (!severed_.load(std::memory_order_relaxed) && pullLocked() != ncclSuccess && !severed_.load())
    end_.markFailed();
  busy_.clear(std::memory_order_release);
}

void NetReceivePump::sleepFor(int64_t ns) {
  // The plugin has no descriptor to sleep on: a short nap, then the waiter pulls again.
  std::this_thread::sleep_for(
      std::min(std::chrono::nanoseconds(ns), std::chrono::nanoseconds(kPollSleep)));
}

ncclResult_t NetReceivePump::pullLocked() {
  BRAID_TRY(end_.check());
  FifoControl* c = end_.fifo();
  const uint32_t nslots = c->nslots;
  const uint32_t tail = c->tail.load(std::memory_order_acquire);
  while (posted_ - tail < nslots && posted_ - published_ < kNetSlotsInFlight) {
    const uint32_t k = posted_ % nslots;
    NetSlotRequests& s = inFlight_[k];
    if (!headerPosted_) {
      s = NetSlotRequests{};
      if (ncclResult_t r =
              net_->irecv(comm_, &headers_[k], sizeof(NetHeader), kNetTag, headerMr_, &s.header);
          r != ncclSuccess)
        return fail(r, "%s: irecv from rank %d returned %s", label(net_).c_str(), end_.peer(),
                    ncclGetErrorString(r));
      if (!s.header) break;
      headerPosted_ = true;
    }
    char* slot = fifoSlots(c) + static_cast<size_t>(k) * c->slotBytes;
    if (ncclResult_t r = net_->irecv(comm_, slot, c->slotBytes, kNetTag, fifoMr_, &s.payload);
        r != ncclSuccess)
      return fail(r, "%s: irecv from rank %d returned %s", label(net_).c_str(), end_.peer(),
                  ncclGetErrorString(r));
    if (!s.payload) break;
    headerPosted_ = false;
    posted_++;
  }
  if (testSlots(net_, inFlight_, nslots, published_, posted_ + (headerPosted_ ? 1 : 0)) !=
      ncclSuccess)
    return addContext(ncclRemoteError, "%s: receiving from rank %d", label(net_).c_str(),
                      end_.peer());
  while (published_ != posted_ && inFlight_[published_ % nslots].complete()) {
    const uint32_t k = published_ % nslots;
    const SlotInfo& info = headers_[k].info;
    if (info.bytes > c->slotBytes || static_cast<int>(info.bytes) != inFlight_[k].payloadBytes)
      return fail(ncclRemoteError, "%s: slot %u from rank %d: its header says %u bytes, %d arrived",
                  label(net_).c_str(), published_, end_.peer(), info.bytes,
                  inFlight_[k].payloadBytes);
    void* slot = nullptr;
    if (!filler_.tryAcquire(&slot)) break;  // (cannot happen: receives go to free slots only)
    filler_.post(info);
    published_++;
  }
  return ncclSuccess;
}

}  // namespace braid
