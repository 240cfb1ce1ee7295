// Point-to-point channels of the Braid process group: sends and receives that make progress
// whatever order a program posts them in, as gloo's do.
//
// One channel per (peer, direction, tag): its own two-rank Braid communicator and its own host
// stream, so a posted receive never holds up a send to the same peer (each rank's `irecv` then
// `isend` works at any size), nor traffic with another peer or under another tag. Messages of
// one channel match in posting order, which is MPI's and gloo's rule for one (source, tag)
// pair; messages under different tags match by tag. A channel is made on first use: the
// sending side publishes a fresh ncclUniqueId in the group's store under a key naming the
// channel, the receiving side waits for it (bounded by the group's timeout), and both
// initialise the two-rank communicator on the channel's stream, so the posting call returns at
// once. Collectives keep the group's own communicator and stream, unordered with channels'
// traffic as with gloo: a program waits on a Work before it reads the tensor.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "braid/braid.h"
#include "nccl.h"

namespace braid_torch {

class PeerChannels {
 public:
  /// `deadlineS` (0: none) bounds each channel's rendezvous and becomes its communicators'
  /// deadline unless BRAID_TIMEOUT_S is set.
  PeerChannels(c10::intrusive_ptr<c10d::Store> store, int rank, double deadlineS);
  /// Waits for every queued send and receive (bounded by the deadline), then frees the channels.
  ~PeerChannels();
  PeerChannels(const PeerChannels&) = delete;
  PeerChannels& operator=(const PeerChannels&) = delete;

  /// What a queued operation runs on its channel's stream thread: the channel's communicator
  /// (nullptr when the channel could not be made) and the peer's rank in it.
  using Body =
      std::function<void(ncclComm_t comm, int peerInChannel, const std::string& setupError)>;

  /// Queues `body` on the channel that carries messages from this rank to `peer` (send) or from
  /// `peer` to this rank (receive) under `tag`; makes the channel first if it is new.
  void post(int peer, bool send, int tag, Body body);

  /// A receive from any source under `tag`: polls every peer's channel for `tag` (making those
  /// not yet made) with braidCommProbe, on a thread of its own, and posts `receive(source)` on
  /// the first channel where a message is waiting and no receive is queued, so it never takes a
  /// message a receive posted earlier to that peer is owed. Receives from any source match in
  /// posting order. After the deadline, `receive(-1)` runs with the channel arguments empty and
  /// a text saying who was waited for.
  void postAnySource(int size, int tag, std::function<Body(int source)> receive);

 private:
  struct Channel;
  using Key = std::tuple<int, bool, int>;  // peer, send, tag

  Channel& channelFor(int peer, bool send, int tag);
  void connect(Channel& c);
  void enqueue(Channel& c, Body body);
  // True when `source` sent a message under `tag` that is waiting and nothing queued is owed it.
  bool waitingFrom(int source, int tag);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  double deadlineS_;
  std::atomic<bool> closing_{false};  // set by the destructor: set-up waits give up
  mutable std::mutex mu_;
  std::map<Key, std::unique_ptr<Channel>> channels_;
  braidStream_t anySource_ = nullptr;  // runs receives from any source, made on first use
};

}  // namespace braid_torch
