// The primitive vocabulary of the device schedules, the same as the host path's: receive a chunk
// from a peer, send one, and the fused forms built from them (receive-reduce-send,
// receive-reduce-copy-send, receive-copy-send), over either protocol of kernels/device/fifo.h.
//
// A Link is one direction of one channel to one peer with its step number. A send is
// sendBegin (wait for a free slot, get where to write) ... sendEnd (publish); a receive is
// recvBegin (wait for the chunk, get where to read) ... recvEnd (hand the slot back). Between
// them the block's threads move or reduce the chunk with copyBytes / reduceElements. Waits are
// made by the block's leader, or by every thread on its own LL words, and give up when the
// host raises the communicator's abort word; from then on the channel only runs to its end.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/element.h"
#include "kernels/device/fifo.h"
#include "kernels/device/sync.h"

namespace braid::kernels::device {

/// The state a channel's threads share: in CUDA's shared memory on the GPU.
struct BlockShared {
  int aborted;
  std::uint64_t header[2];  ///< a point-to-point chunk's header, read by the leader (p2p.h)
};

struct Link {
  DeviceFifo* fifo = nullptr;
  std::uint64_t step = 0;
  std::uint64_t* sent = nullptr;  ///< a send link's step count, in the sender's own memory
};

/// One rank's run of one channel: the arguments, the block, and where LL chunks are staged.
struct ChannelContext {
  const CollectiveArgs* args;
  int channel;
  Block block;
  BlockShared* shared;
  char* recvScratch;  ///< LL: the received chunk, unpacked
  char* sendScratch;  ///< LL: the chunk being built, packed at sendEnd
};

BRAID_DEVICE_FN bool aborted(const ChannelContext& c) {
  return c.shared->aborted != 0;
}

BRAID_DEVICE_FN bool abortRaised(const ChannelContext& c) {
  const int* word = c.args->comm.abort;
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
  const std::uint64_t limit = c.args->comm.timeoutNs;
  if (limit == 0) return false;
  const std::uint64_t now = nowNs();
  if (*since == 0) *since = now;
  return now - *since > limit;
}

/// The link that receives from `peer` on this channel (its step: what this rank has read).
BRAID_DEVICE_FN Link recvLink(const ChannelContext& c, int peer) {
  const DeviceComm& m = c.args->comm;
  DeviceFifo* fifo = m.inbox[c.channel * m.nranks + peer];
  return Link{fifo, loadRelaxed(&fifo->head)};
}

/// The link that sends to `peer` on this channel (its step: what this rank has published, kept
/// in its own memory: once the receiver has read the last chunk, the sender writes nothing more
/// into the receiver's memory, which may then be freed).
BRAID_DEVICE_FN Link sendLink(const ChannelContext& c, int peer) {
  const DeviceComm& m = c.args->comm;
  const int at = c.channel * m.nranks + peer;
  return Link{m.outbox[at], loadRelaxed(&m.sent[at]), &m.sent[at]};
}

/// Bytes one chunk may hold under the launch's protocol.
BRAID_DEVICE_FN std::size_t chunkCapacity(const ChannelContext& c, const DeviceFifo* fifo) {
  return c.args->protocol == Protocol::kLL ? fifo->llSlotBytes : fifo->simpleSlotBytes;
}

/// The leader waits until *word >= target (or the abort word is raised); then the whole block
/// goes on together, agreeing on whether it gave up.
BRAID_DEVICE_FN void waitAtLeast(const ChannelContext& c, const std::uint64_t* word,
                                 std::uint64_t target) {
  if (c.block.leader() && !aborted(c)) {
    std::uint64_t since = 0;
    for (unsigned polls = 0; loadAcquire(word) < target; ++polls) {
      if (giveUp(c, polls, &since)) {
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

/// Words of an LL chunk of `bytes`: at least one, so that even an empty chunk is a handshake.
BRAID_DEVICE_FN std::size_t llWords(std::size_t bytes) {
  return bytes == 0 ? 1 : (bytes + 3) / 4;
}

/// Waits for the chunk `link.step` and returns where its `bytes` can be read.
BRAID_DEVICE_FN const char* recvBegin(const ChannelContext& c, Link& link, std::size_t bytes) {
  if (c.args->protocol == Protocol::kSimple) {
    waitAtLeast(c, &link.fifo->tail, link.step + 1);
    return slotOf(link.fifo, link.step);
  }
  // LL: every thread polls its own words until their flags say this step, and unpacks them.
  const std::uint32_t flag = llFlag(link.step);
  const std::uint64_t* lines = linesOf(link.fifo, link.step);
  const std::size_t words = llWords(bytes);
  bool gaveUp = aborted(c);
  for (std::size_t i = c.block.thread; i < words && !gaveUp; i += c.block.threads) {
    std::uint64_t word = loadRelaxed(&lines[i]);
    std::uint64_t since = 0;
    for (unsigned polls = 0; static_cast<std::uint32_t>(word >> 32) != flag; ++polls) {
      if (giveUp(c, polls, &since)) {
        gaveUp = true;
        break;
      }
      pause(polls);
      word = loadRelaxed(&lines[i]);
    }
    if (gaveUp) break;
    const std::uint32_t data = static_cast<std::uint32_t>(word);
    unsigned char* out = reinterpret_cast<unsigned char*>(c.recvScratch) + 4 * i;
    for (std::size_t k = 0; k < 4 && 4 * i + k < bytes; ++k) out[k] = (data >> (8 * k)) & 0xff;
  }
  if (gaveUp) c.shared->aborted = 1;
  c.block.sync();
  return c.recvScratch;
}

/// Hands the slot of `link.step` back to the sender.
BRAID_DEVICE_FN void recvEnd(const ChannelContext& c, Link& link) {
  c.block.sync();  // every thread is done reading the slot
  if (c.block.leader() && !aborted(c)) storeRelease(&link.fifo->head, link.step + 1);
  ++link.step;
}

/// Waits for a free slot and returns where the chunk `link.step` is to be written.
BRAID_DEVICE_FN char* sendBegin(const ChannelContext& c, Link& link) {
  const std::uint64_t slots = link.fifo->slots;
  if (link.step + 1 > slots) waitAtLeast(c, &link.fifo->head, link.step + 1 - slots);
  return c.args->protocol == Protocol::kSimple ? slotOf(link.fifo, link.step) : c.sendScratch;
}

/// Publishes the chunk of `bytes` written since sendBegin.
BRAID_DEVICE_FN void sendEnd(const ChannelContext& c, Link& link, std::size_t bytes) {
  c.block.sync();  // every thread has written its part
  if (c.args->protocol == Protocol::kSimple) {
    if (c.block.leader() && !aborted(c)) {
      storeRelaxed(link.sent, link.step + 1);
      fenceBeforePublish();
      storeRelease(&link.fifo->tail, link.step + 1);
    }
  } else if (!aborted(c)) {
    const std::uint64_t flag = static_cast<std::uint64_t>(llFlag(link.step)) << 32;
    std::uint64_t* lines = linesOf(link.fifo, link.step);
    const unsigned char* in = reinterpret_cast<const unsigned char*>(c.sendScratch);
    for (std::size_t i = c.block.thread; i < llWords(bytes); i += c.block.threads) {
      std::uint32_t data = 0;
      for (std::size_t k = 0; k < 4 && 4 * i + k < bytes; ++k)
        data |= static_cast<std::uint32_t>(in[4 * i + k]) << (8 * k);
      storeRelaxed(&lines[i], flag | data);
    }
    if (c.block.leader()) storeRelaxed(link.sent, link.step + 1);
    c.block.sync();  // the scratch is free again for the next chunk
  }
  ++link.step;
}

/// dst (and dst2 when given) = src, `bytes` bytes, by the block's threads.
BRAID_DEVICE_FN void copyBytes(const Block& b, void* dst, void* dst2, const void* src,
                               std::size_t bytes) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  unsigned char* d2 = static_cast<unsigned char*>(dst2);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  if (d == s && d2 == nullptr) return;
  std::size_t from = 0;
  if (d2 == nullptr &&
      ((reinterpret_cast<std::uintptr_t>(d) | reinterpret_cast<std::uintptr_t>(s)) & 15) == 0) {
    // Both 16-byte aligned: 16 bytes per thread and step (a full memory transaction per warp).
    struct alignas(16) Vec {
      std::uint64_t lo, hi;
    };
    const std::size_t vectors = bytes / 16;
    Vec* dv = reinterpret_cast<Vec*>(d);
    const Vec* sv = reinterpret_cast<const Vec*>(s);
    for (std::size_t i = b.thread; i < vectors; i += b.threads) dv[i] = sv[i];
    from = vectors * 16;
  }
  for (std::size_t i = from + b.thread; i < bytes; i += b.threads) {
    const unsigned char v = s[i];
    d[i] = v;
    if (d2 != nullptr) d2[i] = v;
  }
}

/// The element parameters of one reduce step (kernels/cuda/element.h), made on either side.
template <int D>
BRAID_DEVICE_FN cuda::ElementParams<D> stepParams(const ReduceOp& op, bool hasAcc, bool pre,
                                                  bool post) {
  using E = ElementType<D>;
  typename E::Storage bits{};
  unsigned char* to = reinterpret_cast<unsigned char*>(&bits);
  for (std::size_t i = 0; i < sizeof(bits); ++i) to[i] = op.scalar[i];
  cuda::ElementParams<D> p{};
  p.scalar = E::load(bits);
  p.divisor = op.postDiv;
  p.hasAcc = hasAcc;
  p.pre = pre && op.preMul;
  p.post = post && op.postDiv > 1;
  return p;
}

/// out0[i] (and out1[i]) = post(acc[i] OP pre(local[i])) for i < n, by the block's threads;
/// acc == nullptr: post(pre(local[i])).
template <int D, class Op>
BRAID_DEVICE_FN void reduceElements(const Block& b, const cuda::ElementParams<D>& p, void* out0,
                                    void* out1, const void* acc, const void* local, std::size_t n) {
  using S = typename ElementType<D>::Storage;
  S* o0 = static_cast<S*>(out0);
  S* o1 = static_cast<S*>(out1);
  const S* a = static_cast<const S*>(acc);
  const S* l = static_cast<const S*>(local);
  for (std::size_t i = b.thread; i < n; i += b.threads) {
    const S v = cuda::ReduceElement<D, Op>::apply(p, a != nullptr ? a[i] : S{}, l[i]);
    o0[i] = v;
    if (o1 != nullptr) o1[i] = v;
  }
}

}  // namespace braid::kernels::device
