#include "peer_channels.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <thread>
#include <vector>

#include <c10/util/Exception.h>

namespace braid_torch {

struct PeerChannels::Channel {
  std::string name;  // the store key, also the channel's name in errors
  bool send = false;
  int peer = -1;
  braidStream_t stream = nullptr;
  ncclComm_t comm = nullptr;        // set on the stream's thread by the first task
  std::string setupError;           // why comm is nullptr, once the first task has run
  std::atomic<bool> ready{false};   // comm is set (release: comm and setupError are written)
  std::atomic<int> outstanding{0};  // operations queued and not yet run
};

namespace {

using Clock = std::chrono::steady_clock;

// One queued operation: the channel it runs on and what it does.
struct Posted {
  PeerChannels::Body body;
  void* channel;
};

std::string describe(ncclResult_t r, ncclComm_t comm) {
  return std::string(ncclGetErrorString(r)) + ": " + ncclGetLastError(comm);
}

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A poll interval that grows from 100 us to 20 ms: prompt at first, idle when waits are long.
void pause(std::chrono::microseconds* interval) {
  std::this_thread::sleep_for(*interval);
  *interval = std::min(*interval * 2, std::chrono::microseconds(20000));
}

}  // namespace

PeerChannels::PeerChannels(c10::intrusive_ptr<c10d::Store> store, int rank, double deadlineS)
    : store_(std::move(store)), rank_(rank), deadlineS_(deadlineS) {}

PeerChannels::~PeerChannels() {
  // Set-up waits for peers that never sent give up now; queued operations still run to their
  // end (bounded by the deadline). Receives from any source first: they post to channels.
  closing_.store(true);
  if (anySource_) braidStreamDestroy(anySource_);
  for (auto& [key, c] : channels_) braidStreamDestroy(c->stream);
  for (auto& [key, c] : channels_) {
    if (!c->comm) continue;
    ncclResult_t asyncError = ncclSuccess;
    ncclCommGetAsyncError(c->comm, &asyncError);
    // Destroy only disconnects this side; abort when the channel failed (the peer may be gone).
    if (asyncError != ncclSuccess) {
      ncclCommAbort(c->comm);
    } else {
      ncclCommDestroy(c->comm);
    }
  }
}

void PeerChannels::connect(Channel& c) {
  ncclUniqueId id;
  try {
    if (c.send) {
      ncclResult_t r = braidGetFreshUniqueId(&id);
      if (r != ncclSuccess) {
        c.setupError = "braidGetFreshUniqueId failed: " + describe(r, nullptr);
        return;
      }
      const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
      store_->set(c.name, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
    } else {
      // The sender publishes the id when it first posts to this channel. Polled, not waited
      // for: a TCPStore client holds its lock through a wait, and this rank's other channels
      // (and the sender's) must reach the store meanwhile or ranks would wait on each other.
      const auto start = Clock::now();
      auto interval = std::chrono::microseconds(100);
      while (!store_->check({c.name})) {
        if (closing_.load()) {
          c.setupError = "the process group was destroyed before rank " + std::to_string(c.peer) +
                         " sent on " + c.name;
          return;
        }
        if (deadlineS_ > 0 && secondsSince(start) > deadlineS_) {
          c.setupError = "timed out after " + std::to_string(static_cast<int>(deadlineS_)) +
                         " s waiting for rank " + std::to_string(c.peer) +
                         " to post its first send on " + c.name;
          return;
        }
        pause(&interval);
      }
      std::vector<uint8_t> bytes = store_->get(c.name);
      if (bytes.size() != sizeof(id)) {
        c.setupError = "the store's " + c.name + " holds " + std::to_string(bytes.size()) +
                       " bytes, expected " + std::to_string(sizeof(id));
        return;
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
  } catch (const std::exception& e) {
    c.setupError = "setting up " + c.name + " through the store: " + e.what();
    return;
  }
  // Rank 0 of the channel is its sender.
  ncclResult_t r = ncclCommInitRank(&c.comm, 2, id, c.send ? 0 : 1);
  if (r != ncclSuccess) {
    c.comm = nullptr;
    c.setupError = "ncclCommInitRank for " + c.name + " failed: " + describe(r, nullptr);
    return;
  }
  const char* braidTimeout = std::getenv("BRAID_TIMEOUT_S");
  if ((!braidTimeout || !*braidTimeout) && deadlineS_ > 0) braidCommSetTimeout(c.comm, deadlineS_);
  c.ready.store(true, std::memory_order_release);
}

void PeerChannels::enqueue(Channel& c, Body body) {
  c.outstanding.fetch_add(1);
  auto* posted = new Posted{std::move(body), &c};
  ncclResult_t r = braidStreamLaunchHostFunc(
      c.stream,
      [](void* arg) {
        std::unique_ptr<Posted> p(static_cast<Posted*>(arg));
        auto& ch = *static_cast<Channel*>(p->channel);
        // The peer is the channel's other rank: the receiver is 1, the sender 0.
        p->body(ch.comm, ch.send ? 1 : 0, ch.setupError);
        ch.outstanding.fetch_sub(1);
        return 0;  // errors live in the operation's Work: later operations still run
      },
      posted);
  if (r != ncclSuccess) {
    c.outstanding.fetch_sub(1);
    delete posted;
    TORCH_CHECK(false, "braid ", c.send ? "send" : "recv", ": braidStreamLaunchHostFunc on ",
                c.name, " failed: ", describe(r, nullptr));
  }
}

PeerChannels::Channel& PeerChannels::channelFor(int peer, bool send, int tag) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = channels_[Key{peer, send, tag}];
  if (slot) return *slot;
  auto c = std::make_unique<Channel>();
  const int from = send ? rank_ : peer, to = send ? peer : rank_;
  c->name =
      "braid_p2p/" + std::to_string(from) + ">" + std::to_string(to) + "/tag" + std::to_string(tag);
  c->send = send;
  c->peer = peer;
  ncclResult_t r = braidStreamCreate(&c->stream);
  if (r != ncclSuccess) {
    channels_.erase(Key{peer, send, tag});
    TORCH_CHECK(false, "braid ", send ? "send" : "recv", ": braidStreamCreate for ", c->name,
                " failed: ", describe(r, nullptr));
  }
  slot = std::move(c);
  // The channel's first task makes its communicator: the posting call does not wait for it.
  Channel* raw = slot.get();
  enqueue(*raw, [this, raw](ncclComm_t, int, const std::string&) { connect(*raw); });
  return *raw;
}

void PeerChannels::post(int peer, bool send, int tag, Body body) {
  enqueue(channelFor(peer, send, tag), std::move(body));
}

bool PeerChannels::waitingFrom(int source, int tag) {
  Channel& c = channelFor(source, false, tag);
  if (!c.ready.load(std::memory_order_acquire) || c.outstanding.load() != 0) return false;
  int arrived = 0;
  return braidCommProbe(c.comm, 0, &arrived) == ncclSuccess && arrived;
}

void PeerChannels::postAnySource(int size, int tag, std::function<Body(int source)> receive) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!anySource_) {
      ncclResult_t r = braidStreamCreate(&anySource_);
      TORCH_CHECK(r == ncclSuccess,
                  "braid recv from any source: braidStreamCreate failed: ", describe(r, nullptr));
    }
  }
  struct Task {
    PeerChannels* self;
    int size, tag;
    std::function<Body(int)> receive;
  };
  auto* task = new Task{this, size, tag, std::move(receive)};
  ncclResult_t r = braidStreamLaunchHostFunc(
      anySource_,
      [](void* arg) {
        std::unique_ptr<Task> t(static_cast<Task*>(arg));
        PeerChannels& self = *t->self;
        const auto start = Clock::now();
        auto interval = std::chrono::microseconds(100);
        for (;;) {
          for (int source = 0; source < t->size; source++) {
            if (source == self.rank_ || !self.waitingFrom(source, t->tag)) continue;
            self.post(source, false, t->tag, t->receive(source));
            return 0;
          }
          const bool late = self.deadlineS_ > 0 && secondsSince(start) > self.deadlineS_;
          if (late || self.closing_.load()) {
            const std::string why =
                late ? "timed out after " + std::to_string(static_cast<int>(self.deadlineS_)) +
                           " s waiting for a message from any rank under tag " +
                           std::to_string(t->tag)
                     : "the process group was destroyed while a receive from any source waited";
            t->receive(-1)(nullptr, 0, why);
            return 0;
          }
          pause(&interval);
        }
      },
      task);
  if (r != ncclSuccess) {
    delete task;
    TORCH_CHECK(false, "braid recv from any source: braidStreamLaunchHostFunc failed: ",
                describe(r, nullptr));
  }
}

}  // namespace braid_torch
