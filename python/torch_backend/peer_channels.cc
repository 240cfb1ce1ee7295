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
  ncclComm_t comm = nullptr;  // set on the stream's thread by the first task
  std::string setupError;     // why comm is nullptr, once the first task has run
};

namespace {

// One queued operation: the channel it runs on and what it does.
struct Posted {
  PeerChannels::Body body;
  const void* channel;
};

std::string describe(ncclResult_t r, ncclComm_t comm) {
  return std::string(ncclGetErrorString(r)) + ": " + ncclGetLastError(comm);
}

}  // namespace

PeerChannels::PeerChannels(c10::intrusive_ptr<c10d::Store> store, int rank, double deadlineS)
    : store_(std::move(store)), rank_(rank), deadlineS_(deadlineS) {}

PeerChannels::~PeerChannels() {
  // Streams first: their queued operations still use the communicators.
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

size_t PeerChannels::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return channels_.size();
}

void PeerChannels::connect(Channel& c, c10d::Store& store, double deadlineS) {
  ncclUniqueId id;
  try {
    if (c.send) {
      ncclResult_t r = braidGetFreshUniqueId(&id);
      if (r != ncclSuccess) {
        c.setupError = "braidGetFreshUniqueId failed: " + describe(r, nullptr);
        return;
      }
      const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
      store.set(c.name, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
    } else {
      // The sender publishes the id when it first posts to this channel. Polled, not waited
      // for: a TCPStore client holds its lock through a wait, and this rank's other channels
      // (and the sender's) must reach the store meanwhile or ranks would wait on each other.
      const auto start = std::chrono::steady_clock::now();
      auto pause = std::chrono::microseconds(100);
      while (!store.check({c.name})) {
        const double waited =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (deadlineS > 0 && waited > deadlineS) {
          c.setupError = "timed out after " + std::to_string(static_cast<int>(deadlineS)) +
                         " s waiting for rank " + std::to_string(c.peer) +
                         " to post its first send on " + c.name;
          return;
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
      }
      std::vector<uint8_t> bytes = store.get(c.name);
      if (bytes.size() != sizeof(id)) {
        c.setupError = "the store's " + c.name + " holds " + std::to_string(bytes.size()) +
                       " bytes, expected " + std::to_string(sizeof(id));
        return;
      }
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
  } catch (const std::exception& e) {
    c.setupError = std::string("waiting for the peer to post its first operation on ") + c.name +
                   ": " + e.what();
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
  if ((!braidTimeout || !*braidTimeout) && deadlineS > 0) braidCommSetTimeout(c.comm, deadlineS);
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
  // The channel's first task makes its communicator: the posting call does not wait for it.
  Channel* raw = c.get();
  auto* first = new Posted{
      [this, raw](ncclComm_t, int, const std::string&) { connect(*raw, *store_, deadlineS_); },
      raw};
  braidStreamLaunchHostFunc(
      c->stream,
      [](void* arg) {
        std::unique_ptr<Posted> p(static_cast<Posted*>(arg));
        p->body(nullptr, 0, "");
        return 0;
      },
      first);
  slot = std::move(c);
  return *slot;
}

void PeerChannels::post(int peer, bool send, int tag, Body body) {
  Channel& c = channelFor(peer, send, tag);
  auto* posted = new Posted{std::move(body), &c};
  ncclResult_t r = braidStreamLaunchHostFunc(
      c.stream,
      [](void* arg) {
        std::unique_ptr<Posted> p(static_cast<Posted*>(arg));
        const auto& ch = *static_cast<const Channel*>(p->channel);
        // The peer is the channel's other rank: the receiver is 1, the sender 0.
        p->body(ch.comm, ch.send ? 1 : 0, ch.setupError);
        return 0;  // errors live in the operation's Work: later operations still run
      },
      posted);
  if (r != ncclSuccess) {
    delete posted;
    TORCH_CHECK(false, "braid ", send ? "send" : "recv", ": braidStreamLaunchHostFunc on ", c.name,
                " failed: ", describe(r, nullptr));
  }
}

}  // namespace braid_torch
