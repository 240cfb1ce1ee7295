// The primitive vocabulary of the device schedules, the same as the host path's: receive a chunk
// from a peer, send one, and the fused forms built from them (receive-reduce-send,
// receive-reduce-copy-send, receive-copy-send), over any protocol of kernels/device/fifo.h.
//
// A Link is one direction of one channel to one peer with its step number. A send is
// sendBegin (wait for a free slot, get where to write: a Dst) ... sendEnd (publish); a receive
// is recvBegin (under Simple wait for the chunk; get where to read: a Src) ... recvEnd (hand
// the slot back). Between them the block's threads move or reduce the chunk with copyStep /
// reduceStep (kernels/device/lines.h), which under LL and LL128 poll the received lines and
// write the sent ones themselves. Waits are made by the block's leader, or by every thread on
// its own lines, and give up when the host raises the communicator's abort word; from then on
// the channel only runs to its end.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/element.h"
#include "kernels/device/fifo.h"
#include "kernels/device/sync.h"
#include "kernels/device/vector_io.h"

namespace braid::kernels::device {

/// The state a channel's threads share: in CUDA's shared memory on the GPU.
struct BlockShared {
  int aborted;
  const DeviceFifo* stalled;  ///< the FIFO of the wait that gave up, and which end it waited for
  int stalledOnSender;
  std::uint64_t header[2];  ///< a point-to-point chunk's header, read by the leader (p2p.h)
};

struct Link {
  DeviceFifo* fifo = nullptr;
  std::uint64_t step = 0;
  std::uint64_t* sent = nullptr;  ///< a send link's step count, in the sender's own memory
};

/// Where a step reads: memory (user buffers, a Simple slot), or the lines of an LL or LL128
/// chunk with the step's flag. Converts from a pointer; nullptr: no operand.
struct Src {
  const char* mem = nullptr;
  const std::uint64_t* lines = nullptr;
  std::uint64_t flag = 0;
  Protocol protocol = Protocol::kSimple;
  const DeviceFifo* fifo = nullptr;  ///< the lines' FIFO
  BRAID_DEVICE_FN Src() = default;
  BRAID_DEVICE_FN Src(const char* p) : mem(p) {}
  BRAID_DEVICE_FN Src(std::nullptr_t) {}
  BRAID_DEVICE_FN bool given() const { return mem != nullptr || lines != nullptr; }
};

/// Where a step writes, as Src.
struct Dst {
  char* mem = nullptr;
  std::uint64_t* lines = nullptr;
  std::uint64_t flag = 0;
  Protocol protocol = Protocol::kSimple;
  BRAID_DEVICE_FN Dst() = default;
  BRAID_DEVICE_FN Dst(char* p) : mem(p) {}
  BRAID_DEVICE_FN Dst(std::nullptr_t) {}
  BRAID_DEVICE_FN bool given() const { return mem != nullptr || lines != nullptr; }
};

/// One rank's run of one channel: the communicator, the protocol, the block, and its scratch.
/// Everything is read where the launch put it (the kernel's parameter, in constant space):
/// nothing of the arguments is copied into a thread's local memory.
struct ChannelContext {
  const DeviceComm* comm;
  Protocol protocol;
  int channel;
  Block block;
  BlockShared* shared;
  char* scratch;                         ///< one chunk of this rank's memory (one-shot, in place)
  const CollectiveArgs* args = nullptr;  ///< the collective's call (nullptr: point-to-point)
  /// premulsum's factor in the dtype's bytes: args->op.scalar, or where ncclScalarDevice put it
  /// (read in stream order, when the step needs it).
  const unsigned char* scalar = nullptr;
};

BRAID_DEVICE_FN bool aborted(const ChannelContext& c) {
  return c.shared->aborted != 0;
}

BRAID_DEVICE_FN bool abortRaised(const ChannelContext& c) {
  const int* word = c.comm->abort;
  if (word == nullptr) return false;
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const volatile int*>(word) != 0;
#else
  return std::atomic_ref<int>(const_cast<int&>(*word)).load(std::memory_order_relaxed) != 0;
#endif
}

/// Whether a wait that has polled `polls` times gives up: every 64 polls it looks at the abort
/// word and at how long it has waited (`since`: 0 until the first look).
BRAID_DEVICE_FN bool giveUp(const ChannelContext& c, unsigned polls, std::uint64_t* since) {
  if ((polls & 63) != 63) return false;
  if (abortRaised(c)) return true;
  const std::uint64_t limit = c.comm->timeoutNs;
  if (limit == 0) return false;
  const std::uint64_t now = nowNs();
  if (*since == 0) *since = now;
  return now - *since > limit;
}

/// The link that receives from `peer` on this channel (its step: what this rank has read).
BRAID_DEVICE_FN Link recvLink(const ChannelContext& c, int peer) {
  const DeviceComm& m = *c.comm;
  DeviceFifo* fifo = m.inbox[c.channel * m.nranks + peer];
  return Link{fifo, loadRelaxed(&fifo->head)};
}

/// The link that sends to `peer` on this channel (its step: what this rank has published, kept
/// in its own memory: once the receiver has read the last chunk, the sender writes nothing more
/// into the receiver's memory, which may then be freed).
BRAID_DEVICE_FN Link sendLink(const ChannelContext& c, int peer) {
  const DeviceComm& m = *c.comm;
  const int at = c.channel * m.nranks + peer;
  return Link{m.outbox[at], loadRelaxed(&m.sent[at]), &m.sent[at]};
}

/// Bytes one chunk may hold under the launch's protocol.
BRAID_DEVICE_FN std::size_t chunkCapacity(const ChannelContext& c, const DeviceFifo* fifo) {
  switch (c.protocol) {
    case Protocol::kLL:
      return fifo->llSlotBytes;
    case Protocol::kLL128:
      return fifo->ll128SlotBytes / kLL128LineBytes * kLL128DataBytes;
    case Protocol::kSimple:
      break;
  }
  return fifo->simpleSlotBytes;
}

/// Notes the wait that gave up: on `fifo`, for its sender's data (`onSender`) or for its
/// receiver's free slot; the channel's mismatch check (collective.h) reads the other end there.
BRAID_DEVICE_FN void noteStall(const ChannelContext& c, const DeviceFifo* fifo, bool onSender) {
  c.shared->stalled = fifo;
  c.shared->stalledOnSender = onSender ? 1 : 0;
}

/// The leader waits until *word >= target (or the abort word is raised); then the whole block
/// goes on together, agreeing on whether it gave up. `word` is in `fifo`; `onSender` as above.
BRAID_DEVICE_FN void waitAtLeast(const ChannelContext& c, const DeviceFifo* fifo, bool onSender,
                                 const std::uint64_t* word, std::uint64_t target) {
  if (c.block.leader() && !aborted(c)) {
    std::uint64_t since = 0;
    for (unsigned polls = 0; loadAcquire(word) < target; ++polls) {
      if (giveUp(c, polls, &since)) {
        noteStall(c, fifo, onSender);
        c.shared->aborted = 1;
        break;
      }
      pause(polls);
    }
  }
  c.block.sync();
}

BRAID_DEVICE_FN char* slotOf(DeviceFifo* fifo, std::uint64_t step) {
  return reinterpret_cast<char*>(fifo) + fifo->simpleOffset +
         (step % fifo->slots) * fifo->simpleSlotBytes;
}

BRAID_DEVICE_FN std::uint64_t* linesOf(DeviceFifo* fifo, std::uint64_t step) {
  return reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(fifo) + fifo->linesOffset) +
         (step % fifo->slots) * (fifo->llSlotBytes / 4);
}

BRAID_DEVICE_FN std::uint64_t* lines128Of(DeviceFifo* fifo, std::uint64_t step) {
  return reinterpret_cast<std::uint64_t*>(reinterpret_cast<char*>(fifo) + fifo->ll128Offset +
                                          (step % fifo->slots) * fifo->ll128SlotBytes);
}

/// The flag of step `step`'s lines under the channel's protocol (LL: 32 bits, LL128: 64).
BRAID_DEVICE_FN std::uint64_t lineFlag(const ChannelContext& c, std::uint64_t step) {
  return c.protocol == Protocol::kLL ? llFlag(step) : step + 1;
}

/// The chunk `link.step`, `bytes` long: under Simple once it has arrived (the block waits);
/// under LL and LL128 its lines, which the step's threads poll as they read them.
BRAID_DEVICE_FN Src recvBegin(const ChannelContext& c, Link& link, std::size_t bytes) {
  (void)bytes;
  Src s;
  s.protocol = c.protocol;
  if (c.protocol == Protocol::kSimple) {
    waitAtLeast(c, link.fifo, true, &link.fifo->tail, link.step + 1);
    s.mem = slotOf(link.fifo, link.step);
    return s;
  }
  c.block.sync();  // every step starts together, as under Simple
  s.lines = c.protocol == Protocol::kLL ? linesOf(link.fifo, link.step)
                                        : lines128Of(link.fifo, link.step);
  s.flag = lineFlag(c, link.step);
  s.fifo = link.fifo;
  return s;
}

/// Hands the slot of `link.step` back to the sender.
BRAID_DEVICE_FN void recvEnd(const ChannelContext& c, Link& link) {
  c.block.sync();  // every thread is done reading the slot
  if (c.block.leader() && !aborted(c)) storeRelease(&link.fifo->head, link.step + 1);
  ++link.step;
}

/// Waits for a free slot and returns where the chunk `link.step` is to be written.
BRAID_DEVICE_FN Dst sendBegin(const ChannelContext& c, Link& link) {
  const std::uint64_t slots = link.fifo->slots;
  if (link.step + 1 > slots)
    waitAtLeast(c, link.fifo, false, &link.fifo->head, link.step + 1 - slots);
  Dst d;
  d.protocol = c.protocol;
  if (c.protocol == Protocol::kSimple) {
    d.mem = slotOf(link.fifo, link.step);
    return d;
  }
  d.lines = c.protocol == Protocol::kLL ? linesOf(link.fifo, link.step)
                                        : lines128Of(link.fifo, link.step);
  d.flag = lineFlag(c, link.step);
  return d;
}

/// Publishes the chunk of `bytes` written since sendBegin (LL and LL128 lines published
/// themselves as they were written).
BRAID_DEVICE_FN void sendEnd(const ChannelContext& c, Link& link, std::size_t bytes) {
  (void)bytes;
  c.block.sync();  // every thread has written its part
  if (c.block.leader() && !aborted(c)) {
    storeRelaxed(link.sent, link.step + 1);
    if (c.protocol == Protocol::kSimple) {
      fenceBeforePublish();
      storeRelease(&link.fifo->tail, link.step + 1);
    }
  }
  ++link.step;
}

/// The element parameters of one reduce step of the channel's collective (kernels/cuda/element.h).
template <int D>
BRAID_DEVICE_FN cuda::ElementParams<D> stepParams(const ChannelContext& c, bool hasAcc, bool pre,
                                                  bool post) {
  using E = ElementType<D>;
  const ReduceOp& op = c.args->op;
  typename E::Storage bits{};
  unsigned char* to = reinterpret_cast<unsigned char*>(&bits);
  for (std::size_t i = 0; i < sizeof(bits); ++i) to[i] = c.scalar[i];
  cuda::ElementParams<D> p{};
  p.scalar = E::load(bits);
  p.divisor = op.postDiv;
  p.hasAcc = hasAcc;
  p.pre = pre && op.preMul;
  p.post = post && op.postDiv > 1;
  return p;
}

}  // namespace braid::kernels::device
