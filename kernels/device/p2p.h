// Point-to-point on the device: a group's sends and receives (and all-to-all, gather and
// scatter, which are groups of them) as one launch, over the same FIFOs and primitives as the
// collectives (kernels/device/primitives.h).
//
// Blocks: one per (peer, direction) and per-peer channel, so that a rank's sends and receives
// progress together (one block that sent first and received after would deadlock a ring of
// large messages). A block runs its peer's transfers of its direction in the order they were
// posted: the k-th send to a peer meets the peer's k-th receive from this rank, as in NCCL.
// Every transfer crosses every per-peer channel (channel c takes part c of its bytes), so both
// ends agree on the chunks without knowing each other's sizes in advance.
//
// Each chunk starts with a 16-byte header: the sender's total bytes and the chunk's offset. A
// receiver follows the sender's chunks even when the sizes differ, so a mismatched pair ends
// (reported as kChannelSizeMismatch, nothing written) instead of hanging. Under LL the header is
// the chunk's first four words, read first. A receive from this rank itself copies from the
// matching send to self (the host checked that they pair up).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/device/ring_schedules.h"

namespace braid::kernels::device {

/// One send or receive of a launch. Items are grouped by block: those of one (peer, direction)
/// are adjacent, in posting order, and share `pair` (the block group that runs them). A send to
/// this rank itself has pair -1 (its receive copies it).
struct P2pItem {
  const void* src = nullptr;  ///< send
  void* dst = nullptr;        ///< receive
  std::uint64_t bytes = 0;
  int peer = 0;
  std::int16_t pair = -1;
  std::uint8_t isSend = 0;
  std::uint8_t protocol = 0;  ///< Protocol: chosen from the bytes, alike on both ends
};

/// A launch's items are its kernel parameter (as LaunchArgs, so a CUDA graph captures them): at
/// most 32764 bytes, which every GPU CUDA 13 supports takes (CUDA 12.1 and later); a larger
/// group runs on the host-driven path.
inline constexpr int kMaxP2pItems = 960;
inline constexpr std::size_t kP2pHeaderBytes = 16;

struct P2pLaunchArgs {
  DeviceComm comm;
  int channelsPerPeer = 1;  ///< alike on every rank (<= comm.channels)
  int pairs = 0;            ///< block groups: the launch has pairs * channelsPerPeer blocks
  int count = 0;
  P2pItem items[kMaxP2pItems];
  BRAID_HOST_DEVICE int blocks() const { return pairs * channelsPerPeer; }
};

/// A chunk's header as it travels.
struct P2pHeader {
  std::uint64_t total;   ///< the sender's bytes for the whole transfer
  std::uint64_t offset;  ///< where this chunk's payload starts in the transfer
};

/// Why this launch cannot run, or nullptr. Checked on the host before a launch.
inline const char* unsupported(const P2pLaunchArgs& l) {
  if (l.comm.nranks < 1 || l.comm.rank < 0 || l.comm.rank >= l.comm.nranks)
    return "rank outside the communicator";
  if (l.channelsPerPeer < 1 || l.channelsPerPeer > l.comm.channels)
    return "per-peer channels outside the communicator's";
  if (l.count < 1 || l.count > kMaxP2pItems) return "a launch runs 1 to 960 transfers";
  if (l.pairs < 1) return "no block";
  for (int i = 0; i < l.count; ++i) {
    const P2pItem& it = l.items[i];
    if (it.peer < 0 || it.peer >= l.comm.nranks) return "peer outside the communicator";
    if (it.pair >= l.pairs || (it.pair < 0 && !(it.isSend && it.peer == l.comm.rank)))
      return "a transfer outside the launch's blocks";
    if (it.protocol > 1) return "unknown protocol";
  }
  if (l.comm.nranks > 1 && (l.comm.inbox == nullptr || l.comm.outbox == nullptr)) return "no FIFOs";
  return nullptr;
}

/// Part `i` of `n` of a transfer of `total` bytes, cut at multiples of 16 bytes, so that every
/// chunk of a 16-byte aligned buffer is aligned too (the vector copy of copyBytes).
BRAID_DEVICE_FN Range p2pPart(std::uint64_t total, int i, int n) {
  const Range units = partOf((total + 15) / 16, i, n);
  const std::size_t begin = units.begin * 16 < total ? units.begin * 16 : total;
  const std::size_t end = units.end * 16 < total ? units.end * 16 : total;
  return Range{begin, end};
}

/// The LL words of an LL chunk's payload start after the header's four.
inline constexpr std::size_t kP2pHeaderWords = kP2pHeaderBytes / 4;

/// Sends one transfer's part for this block's channel, chunk by chunk.
BRAID_DEVICE_FN void p2pSend(const ChannelContext& c, Link& link, const P2pItem& it, int part,
                             int parts) {
  const Range mine = p2pPart(it.bytes, part, parts);
  const char* src = static_cast<const char*>(it.src);
  const std::size_t capacity = chunkCapacity(c, link.fifo) - kP2pHeaderBytes;
  std::size_t offset = mine.begin;
  do {
    const std::size_t n = mine.end - offset < capacity ? mine.end - offset : capacity;
    const P2pHeader header{it.bytes, offset};
    char* slot = sendBegin(c, link).mem;  // Simple; LL writes its lines below
    if (c.protocol == Protocol::kSimple) {
      if (c.block.leader()) *reinterpret_cast<P2pHeader*>(slot) = header;
      copyBytes(c.block, slot + kP2pHeaderBytes, nullptr, src + offset, n);
      sendEnd(c, link, kP2pHeaderBytes + n);
    } else {
      // LL: words built straight from the header and the source (no staging).
      c.block.sync();
      if (!aborted(c)) {
        const std::uint64_t flag = static_cast<std::uint64_t>(llFlag(link.step)) << 32;
        std::uint64_t* lines = linesOf(link.fifo, link.step);
        const unsigned char* head = reinterpret_cast<const unsigned char*>(&header);
        const unsigned char* in = reinterpret_cast<const unsigned char*>(src + offset);
        const std::size_t words = kP2pHeaderWords + (n + 3) / 4;
        for (std::size_t w = c.block.thread; w < words; w += c.block.threads) {
          std::uint32_t data = 0;
          for (std::size_t k = 0; k < 4; ++k) {
            const std::size_t at = 4 * w + k;
            const unsigned char byte = at < kP2pHeaderBytes       ? head[at]
                                       : at - kP2pHeaderBytes < n ? in[at - kP2pHeaderBytes]
                                                                  : 0;
            data |= static_cast<std::uint32_t>(byte) << (8 * k);
          }
          storeRelaxed(&lines[w], flag | data);
        }
        if (c.block.leader()) storeRelaxed(link.sent, link.step + 1);
      }
      c.block.sync();
      ++link.step;
    }
    offset += n;
  } while (offset < mine.end);
}

/// Polls LL word `w` of the chunk at link.step until its flag says this step; its 4 data bytes,
/// or false when the wait gave up.
BRAID_DEVICE_FN bool llWord(const ChannelContext& c, const Link& link, std::size_t w,
                            std::uint32_t* data) {
  const std::uint32_t flag = llFlag(link.step);
  const std::uint64_t* lines = linesOf(link.fifo, link.step);
  std::uint64_t word = loadRelaxed(&lines[w]);
  std::uint64_t since = 0;
  for (unsigned polls = 0; static_cast<std::uint32_t>(word >> 32) != flag; ++polls) {
    if (giveUp(c, polls, &since)) return false;
    pause(polls);
    word = loadRelaxed(&lines[w]);
  }
  *data = static_cast<std::uint32_t>(word);
  return true;
}

/// Receives one transfer's part for this block's channel, following the sender's chunks; a
/// sender whose total differs is drained and reported (`*mismatch`), nothing written.
BRAID_DEVICE_FN void p2pRecv(const ChannelContext& c, Link& link, const P2pItem& it, int part,
                             int parts, bool* mismatch) {
  char* dst = static_cast<char*>(it.dst);
  const std::size_t capacity = chunkCapacity(c, link.fifo) - kP2pHeaderBytes;
  for (;;) {
    P2pHeader header{};
    if (c.protocol == Protocol::kSimple) {
      const char* slot = recvBegin(c, link, 0).mem;
      if (aborted(c)) return;
      header = *reinterpret_cast<const P2pHeader*>(slot);
      const Range theirs = p2pPart(header.total, part, parts);
      const std::size_t n =
          theirs.end - header.offset < capacity ? theirs.end - header.offset : capacity;
      if (header.total == it.bytes)
        copyBytes(c.block, dst + header.offset, nullptr, slot + kP2pHeaderBytes, n);
      recvEnd(c, link);
      if (header.offset + n >= theirs.end) {
        *mismatch |= header.total != it.bytes;
        return;
      }
      continue;
    }
    // LL: the leader reads the header words and shares them; then every thread its own words.
    if (c.block.leader() && !aborted(c)) {
      std::uint32_t words[kP2pHeaderWords];
      bool ok = true;
      for (std::size_t w = 0; w < kP2pHeaderWords && ok; ++w) ok = llWord(c, link, w, &words[w]);
      if (ok) {
        c.shared->header[0] = words[0] | (static_cast<std::uint64_t>(words[1]) << 32);
        c.shared->header[1] = words[2] | (static_cast<std::uint64_t>(words[3]) << 32);
      } else {
        c.shared->aborted = 1;
      }
    }
    c.block.sync();
    if (aborted(c)) return;
    header = P2pHeader{c.shared->header[0], c.shared->header[1]};
    const Range theirs = p2pPart(header.total, part, parts);
    const std::size_t n =
        theirs.end - header.offset < capacity ? theirs.end - header.offset : capacity;
    const bool keep = header.total == it.bytes;
    bool gaveUp = false;
    const std::size_t words = kP2pHeaderWords + (n + 3) / 4;
    for (std::size_t w = kP2pHeaderWords + c.block.thread; w < words && !gaveUp;
         w += c.block.threads) {
      std::uint32_t data = 0;
      if (!llWord(c, link, w, &data)) {
        gaveUp = true;
        break;
      }
      const std::size_t at = 4 * (w - kP2pHeaderWords);
      if (!keep) continue;
      for (std::size_t k = 0; k < 4 && at + k < n; ++k)
        dst[header.offset + at + k] = static_cast<char>((data >> (8 * k)) & 0xff);
    }
    if (gaveUp) c.shared->aborted = 1;
    recvEnd(c, link);  // syncs first: every thread has read its words
    if (aborted(c)) return;
    if (header.offset + n >= theirs.end) {
      *mismatch |= !keep;
      return;
    }
  }
}

/// The k-th send of this rank to itself (the items in posting order), or nullptr.
BRAID_DEVICE_FN const P2pItem* sendToSelf(const P2pLaunchArgs& l, int k) {
  for (int i = 0; i < l.count; ++i)
    if (l.items[i].isSend && l.items[i].peer == l.comm.rank && k-- == 0) return &l.items[i];
  return nullptr;
}

/// Block `block` of a point-to-point launch: its (peer, direction)'s transfers, in order, on
/// its channel. Returns a ChannelStatus.
BRAID_DEVICE_FN int runP2pBlock(const P2pLaunchArgs& l, int block, const Block& threads,
                                BlockShared* shared) {
  if (threads.leader()) shared->aborted = 0;
  threads.sync();
  const int pair = block / l.channelsPerPeer;
  const int channel = block % l.channelsPerPeer;
  ChannelContext c{&l.comm, Protocol::kSimple, channel, threads, shared, nullptr};
  bool mismatch = false;
  int selfCount = 0;
  for (int i = 0; i < l.count && !aborted(c); ++i) {
    const P2pItem& it = l.items[i];
    if (it.pair != pair) continue;
    if (it.peer == l.comm.rank) {  // a receive from self: the matching send's part, copied
      const P2pItem* from = sendToSelf(l, selfCount++);
      const Range mine = p2pPart(it.bytes, channel, l.channelsPerPeer);
      if (from != nullptr && from->bytes == it.bytes)
        copyBytes(threads, static_cast<char*>(it.dst) + mine.begin, nullptr,
                  static_cast<const char*>(from->src) + mine.begin, mine.size());
      else
        mismatch = true;
      threads.sync();
      continue;
    }
    c.protocol = static_cast<Protocol>(it.protocol);
    if (it.isSend) {
      Link link = sendLink(c, it.peer);
      p2pSend(c, link, it, channel, l.channelsPerPeer);
    } else {
      Link link = recvLink(c, it.peer);
      p2pRecv(c, link, it, channel, l.channelsPerPeer, &mismatch);
    }
  }
  threads.sync();
  if (aborted(c)) return kChannelAborted;
  return mismatch ? kChannelSizeMismatch : kChannelOk;
}

}  // namespace braid::kernels::device
