// Ring schedules of every collective, run by one channel of one rank over the primitives of
// kernels/device/primitives.h, as NCCL's ring kernels run them. The ring is the rank order
// (rank r receives from r - 1 and sends to r + 1); each channel takes a contiguous share of
// every block of the buffer and moves it in chunks of one slot. Both sides of a link compute
// the same chunk sizes, so no size travels with the data.
#pragma once

#include <cstddef>

#include "kernels/device/lines.h"

namespace braid::kernels::device {

struct Range {
  std::size_t begin, end;
  BRAID_DEVICE_FN std::size_t size() const { return end - begin; }
};

/// [begin, end) of part `i` of `n` near-equal parts of [0, total), cut at multiples of
/// `granule` (the last part ends at `total`). Cutting the elements of a buffer at 16 bytes keeps
/// every part, and so every chunk of it, on the 16-byte packs of the data loops (vector_io.h).
BRAID_DEVICE_FN Range partOf(std::size_t total, std::size_t i, std::size_t n,
                             std::size_t granule = 1) {
  const std::size_t begin = total * i / n / granule * granule;
  const std::size_t end = i + 1 == n ? total : total * (i + 1) / n / granule * granule;
  return Range{begin, end};
}

/// Elements of dtype D per 16 bytes: the granule of a schedule's parts.
template <int D>
BRAID_DEVICE_FN std::size_t packGranule() {
  return 16 / sizeof(typename ElementType<D>::Storage);
}

/// The most elements any of the `n` parts of `total` holds.
BRAID_DEVICE_FN std::size_t longestPart(std::size_t total, std::size_t n, std::size_t granule) {
  std::size_t longest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t size = partOf(total, i, n, granule).size();
    longest = size > longest ? size : longest;
  }
  return longest;
}

/// The piece of block `b` (one of `blocks` near-equal blocks of this channel's range, cut at
/// `granule`) that starts `offset` elements into the block and holds at most `chunk` elements;
/// may be empty.
BRAID_DEVICE_FN Range pieceOf(Range channel, int b, int blocks, std::size_t offset,
                              std::size_t chunk, std::size_t granule = 1) {
  const Range block = partOf(channel.size(), b, blocks, granule);
  const std::size_t begin = block.begin + offset < block.end ? block.begin + offset : block.end;
  const std::size_t end = begin + chunk < block.end ? begin + chunk : block.end;
  return Range{channel.begin + begin, channel.begin + end};
}

BRAID_DEVICE_FN int wrap(int i, int n) {
  return ((i % n) + n) % n;
}

/// What every schedule starts from: the call, this rank and the communicator's size, the
/// element size, the buffers as bytes, and this channel's share of `count` elements.
template <int D>
struct Frame {
  const CollectiveArgs& a;
  int n, r;
  std::size_t size;
  const char* in;
  char* out;
  Range channel;
  BRAID_DEVICE_FN explicit Frame(const ChannelContext& c)
      : a(*c.args),
        n(a.comm.nranks),
        r(a.comm.rank),
        size(sizeof(typename ElementType<D>::Storage)),
        in(static_cast<const char*>(a.sendbuff)),
        out(static_cast<char*>(a.recvbuff)),
        channel(partOf(a.count, c.channel, a.comm.channels, packGranule<D>())) {}
};

/// Reduce-scatter then (all-reduce) all-gather around the ring. All-reduce (`gather`): the
/// buffer of `count` is n blocks, each channel a share of every block, and the result lands in
/// the whole recvbuff. Reduce-scatter: the input is n blocks of `count`, each channel a share of
/// `count`, and block `rank` of the result lands in recvbuff.
template <int D, class Op>
BRAID_DEVICE_FN void ringReduce(const ChannelContext& c, bool gather) {
  const auto [a, n, r, size, in, out, channel] = Frame<D>(c);
  const auto first = stepParams<D>(c, false, true, n == 1);
  const auto middle = stepParams<D>(c, true, true, false);
  const auto last = stepParams<D>(c, true, true, true);
  if (channel.size() == 0) return;  // every rank skips the same channels
  if (n == 1) {
    reduceStep<D, Op>(c, first, out + channel.begin * size, nullptr, nullptr,
                      in + channel.begin * size, channel.size());
    return;
  }
  Link fromPrev = recvLink(c, wrap(r - 1, n)), toNext = sendLink(c, wrap(r + 1, n));
  const std::size_t chunk = chunkCapacity(c, toNext.fifo) / size;
  const std::size_t granule = packGranule<D>();
  const std::size_t longest = gather ? longestPart(channel.size(), n, granule) : channel.size();
  for (std::size_t offset = 0; offset < longest; offset += chunk) {
    // Block b's piece of this round, and where b's input is (reduce-scatter: rank b's part).
    auto piece = [&](int b) {
      return gather ? pieceOf(channel, b, n, offset, chunk, granule)
                    : pieceOf(channel, 0, 1, offset, chunk);
    };
    auto input = [&](Range p, int b) { return in + ((gather ? 0 : b * a.count) + p.begin) * size; };
    // Step 0: this rank's contribution to block r - 1 starts its way round.
    int b = wrap(r - 1, n);
    Range p = piece(b);
    Dst slot = sendBegin(c, toNext);
    reduceStep<D, Op>(c, first, slot, nullptr, nullptr, input(p, b), p.size());
    sendEnd(c, toNext, p.size() * size);
    // Steps 1 .. n-2: add this rank's part and pass on.
    for (int j = 2; j < n; ++j) {
      b = wrap(r - j, n);
      p = piece(b);
      Src got = recvBegin(c, fromPrev, p.size() * size);
      slot = sendBegin(c, toNext);
      reduceStep<D, Op>(c, middle, slot, nullptr, got, input(p, b), p.size());
      recvEnd(c, fromPrev);
      sendEnd(c, toNext, p.size() * size);
    }
    // Block r is complete here: the result and, for all-reduce, the start of its way round.
    p = piece(r);
    Src got = recvBegin(c, fromPrev, p.size() * size);
    slot = gather ? sendBegin(c, toNext) : nullptr;
    reduceStep<D, Op>(c, last, out + p.begin * size, slot, got, input(p, r), p.size());
    recvEnd(c, fromPrev);
    if (!gather) continue;
    sendEnd(c, toNext, p.size() * size);
    // All-gather: pass each finished block on, keeping a copy; the last one is only kept.
    for (int j = 1; j < n; ++j) {
      p = piece(wrap(r - j, n));
      got = recvBegin(c, fromPrev, p.size() * size);
      slot = j < n - 1 ? sendBegin(c, toNext) : nullptr;
      copyStep(c, out + p.begin * size, slot, got, p.size() * size);
      recvEnd(c, fromPrev);
      if (slot.given()) sendEnd(c, toNext, p.size() * size);
    }
  }
}

/// All-gather: rank r's `count` elements land at block r of every rank's recvbuff.
template <int D>
BRAID_DEVICE_FN void ringAllGather(const ChannelContext& c) {
  const auto [a, n, r, size, in, out, channel] = Frame<D>(c);
  auto at = [&](int b, std::size_t i) { return out + (b * a.count + i) * size; };
  if (channel.size() == 0) return;
  if (n == 1) {
    copyStep(c, at(0, channel.begin), nullptr, in + channel.begin * size, channel.size() * size);
    return;
  }
  Link fromPrev = recvLink(c, wrap(r - 1, n)), toNext = sendLink(c, wrap(r + 1, n));
  const std::size_t chunk = chunkCapacity(c, toNext.fifo) / size;
  for (std::size_t offset = 0; offset < channel.size(); offset += chunk) {
    const Range p = pieceOf(channel, 0, 1, offset, chunk);
    Dst slot = sendBegin(c, toNext);
    copyStep(c, at(r, p.begin), slot, in + p.begin * size, p.size() * size);
    sendEnd(c, toNext, p.size() * size);
    for (int j = 1; j < n; ++j) {
      Src got = recvBegin(c, fromPrev, p.size() * size);
      slot = j < n - 1 ? sendBegin(c, toNext) : nullptr;
      copyStep(c, at(wrap(r - j, n), p.begin), slot, got, p.size() * size);
      recvEnd(c, fromPrev);
      if (slot.given()) sendEnd(c, toNext, p.size() * size);
    }
  }
}

/// Broadcast down the chain root, root + 1, ..., root - 1.
template <int D>
BRAID_DEVICE_FN void ringBroadcast(const ChannelContext& c) {
  const auto [a, n, r, size, in, out, channel] = Frame<D>(c);
  const int position = wrap(r - a.root, n);
  if (channel.size() == 0) return;
  Link fromPrev{}, toNext{};
  if (position > 0) fromPrev = recvLink(c, wrap(r - 1, n));
  if (position < n - 1) toNext = sendLink(c, wrap(r + 1, n));
  const DeviceFifo* any = position < n - 1 ? toNext.fifo : fromPrev.fifo;
  const std::size_t chunk = n == 1 ? channel.size() + 1 : chunkCapacity(c, any) / size;
  for (std::size_t offset = 0; offset < channel.size(); offset += chunk) {
    const Range p = pieceOf(channel, 0, 1, offset, chunk);
    char* mine = out + p.begin * size;
    if (position == 0) {
      Dst slot = n > 1 ? sendBegin(c, toNext) : nullptr;
      copyStep(c, mine, slot, in + p.begin * size, p.size() * size);
      if (n > 1) sendEnd(c, toNext, p.size() * size);
    } else {
      Src got = recvBegin(c, fromPrev, p.size() * size);
      Dst slot = position < n - 1 ? sendBegin(c, toNext) : nullptr;
      copyStep(c, mine, slot, got, p.size() * size);
      recvEnd(c, fromPrev);
      if (slot.given()) sendEnd(c, toNext, p.size() * size);
    }
  }
}

/// Reduce up the chain root + 1, ..., root - 1, root; the result lands at the root alone.
template <int D, class Op>
BRAID_DEVICE_FN void ringReduceToRoot(const ChannelContext& c) {
  const auto [a, n, r, size, in, out, channel] = Frame<D>(c);
  const int position = wrap(r - a.root - 1, n);  // the root is last
  if (channel.size() == 0) return;
  const bool isRoot = position == n - 1;
  const auto first = stepParams<D>(c, false, true, isRoot);
  const auto next = stepParams<D>(c, true, true, isRoot);
  Link fromPrev{}, toNext{};
  if (position > 0) fromPrev = recvLink(c, wrap(r - 1, n));
  if (!isRoot) toNext = sendLink(c, wrap(r + 1, n));
  const DeviceFifo* any = !isRoot ? toNext.fifo : fromPrev.fifo;
  const std::size_t chunk = n == 1 ? channel.size() + 1 : chunkCapacity(c, any) / size;
  for (std::size_t offset = 0; offset < channel.size(); offset += chunk) {
    const Range p = pieceOf(channel, 0, 1, offset, chunk);
    const char* local = in + p.begin * size;
    Dst target = isRoot ? out + p.begin * size : sendBegin(c, toNext);
    if (position == 0) {
      reduceStep<D, Op>(c, first, target, nullptr, nullptr, local, p.size());
    } else {
      Src got = recvBegin(c, fromPrev, p.size() * size);
      reduceStep<D, Op>(c, next, target, nullptr, got, local, p.size());
      recvEnd(c, fromPrev);
    }
    if (!isRoot) sendEnd(c, toNext, p.size() * size);
  }
}

}  // namespace braid::kernels::device
