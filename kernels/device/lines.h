// The steps of the schedules over any protocol: copyStep and reduceStep read and write user
// memory, Simple slots, or the lines of the two low-latency protocols, where the data is. An LL
// or LL128 chunk is read from the sender's lines and written into the next peer's lines by the
// same loop that reduces it: no pass through a staging buffer (NCCL's LL and LL128 primitives).
//
// The unit of the line loops is a word of 8 data bytes (a whole number of elements of every
// dtype): word w of a chunk is its bytes [8w, 8w + 8).
// - LL: one word per 16-byte line {data 0-3, flag, data 4-7, flag}. On the GPU one 16-byte load
//   or store moves a line, so a reader that sees both flags sees the data between them; in the
//   emulation each 8-byte half is one atomic word carrying its own flag. Every thread polls its
//   own lines.
// - LL128: 15 words per 128-byte line, the 64-bit flag in the last word. On the GPU 8 threads
//   move a line, 16 bytes each in one warp-wide access (the thread of the last 16 bytes carries
//   the flag), which the GPU's memory system delivers whole, as NCCL's LL128 relies on; that
//   thread judges the flag and tells the other 7. In the emulation one thread moves a line, data
//   first and the flag last with release, and reads the flag first with acquire.
// A chunk of 0 bytes still moves one line, so that every chunk is a handshake.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/device/primitives.h"
#include "kernels/device/vector_io.h"

namespace braid::kernels::device {

/// Threads that move one LL128 line, and the words each holds (the last thread's last is the
/// flag). The emulation's block is one thread.
#if defined(__CUDA_ARCH__)
inline constexpr int kLL128Lanes = 8;
#else
inline constexpr int kLL128Lanes = 1;
#endif
inline constexpr int kLL128LineWords = kLL128LineBytes / 8;
inline constexpr int kLL128DataWords = kLL128DataBytes / 8;
inline constexpr int kLaneWords = kLL128LineWords / kLL128Lanes;

/// The raw words of one line (or of this thread's share of an LL128 line).
struct LineWords {
  std::uint64_t w[kLaneWords];
};

BRAID_DEVICE_FN const std::uint64_t* lineAt(const Src& s, std::size_t u, int lane) {
  return s.protocol == Protocol::kLL ? s.lines + 2 * u
                                     : s.lines + u * kLL128LineWords + lane * kLaneWords;
}
BRAID_DEVICE_FN std::uint64_t* lineAt(const Dst& d, std::size_t u, int lane) {
  return d.protocol == Protocol::kLL ? d.lines + 2 * u
                                     : d.lines + u * kLL128LineWords + lane * kLaneWords;
}

/// Issues the load of line `u` (the GPU's volatile loads; the emulation's LL128 reads in
/// lineArrived, after the flag).
BRAID_DEVICE_FN void loadLine(const Src& s, std::size_t u, int lane, LineWords& r) {
  const std::uint64_t* at = lineAt(s, u, lane);
#if defined(__CUDA_ARCH__)
  asm volatile("{ .reg .u64 g; cvta.to.global.u64 g, %2; ld.volatile.global.v2.u64 {%0, %1}, [g]; }"
               : "=l"(r.w[0]), "=l"(r.w[1])
               : "l"(at)
               : "memory");
#else
  if (s.protocol == Protocol::kLL) {
    r.w[0] = loadRelaxed(at);
    r.w[1] = loadRelaxed(at + 1);
  }
#endif
}

/// Whether the line loaded into `r` carries the step's flag (GPU LL128: as far as this thread
/// can see; groupVerdict decides). The emulation's LL128 acquires the flag, then reads the data.
BRAID_DEVICE_FN bool lineArrived(const Src& s, std::size_t u, int lane, LineWords& r) {
  if (s.protocol == Protocol::kLL) {
    const std::uint32_t flag = static_cast<std::uint32_t>(s.flag);
    return static_cast<std::uint32_t>(r.w[0] >> 32) == flag &&
           static_cast<std::uint32_t>(r.w[1] >> 32) == flag;
  }
#if defined(__CUDA_ARCH__)
  (void)u;
  return lane == kLL128Lanes - 1 && r.w[1] == s.flag;
#else
  const std::uint64_t* at = lineAt(s, u, lane);
  if (loadAcquire(at + kLL128LineWords - 1) != s.flag) return false;
  for (int k = 0; k < kLL128DataWords; ++k) r.w[k] = loadRelaxed(at + k);
  return true;
#endif
}

/// The state of a wait that the threads of one line share: on the GPU under LL128 the verdict
/// of the thread that holds the flag; otherwise each thread's own.
BRAID_DEVICE_FN int groupVerdict(Protocol protocol, int state) {
#if defined(__CUDA_ARCH__)
  if (protocol == Protocol::kLL128) {
    const unsigned laneInWarp = threadIdx.x & 31;
    return __shfl_sync(0xffu << (laneInWarp & ~7u), state, kLL128Lanes - 1, kLL128Lanes);
  }
#endif
  (void)protocol;
  return state;
}

/// Polls line `u` until it carries the flag, leaving its data words in r.w[0...] (LL: w[0]);
/// false when the wait gave up.
BRAID_DEVICE_FN bool awaitLine(const ChannelContext& c, const Src& s, std::size_t u, int lane,
                               LineWords& r) {
  std::uint64_t since = 0;
  for (unsigned polls = 0;; ++polls) {
    int state = lineArrived(s, u, lane, r) ? 1 : 0;
    if (state == 0 && giveUp(c, polls, &since)) state = 2;
    state = groupVerdict(s.protocol, state);
    if (state == 2) {
      noteStall(c, s.fifo, true);
      return false;
    }
    if (state == 1) break;
    pause(polls);
    loadLine(s, u, lane, r);
  }
  if (s.protocol == Protocol::kLL)
    r.w[0] = (r.w[0] & 0xffffffffu) | (r.w[1] << 32);  // the data halves, little-endian
  return true;
}

/// Writes line `u` with this thread's data words `w` (LL: w[0]) and the step's flag.
BRAID_DEVICE_FN void storeLine(const Dst& d, std::size_t u, int lane, const std::uint64_t* w) {
  std::uint64_t* at = lineAt(d, u, lane);
  if (d.protocol == Protocol::kLL) {
    const std::uint64_t flag = d.flag << 32;
    const std::uint64_t lo = flag | (w[0] & 0xffffffffu), hi = flag | (w[0] >> 32);
#if defined(__CUDA_ARCH__)
    asm volatile(
        "{ .reg .u64 g; cvta.to.global.u64 g, %0; st.volatile.global.v2.u64 [g], {%1, %2}; }" ::"l"(
            at),
        "l"(lo), "l"(hi)
        : "memory");
#else
    storeRelaxed(at, lo);
    storeRelaxed(at + 1, hi);
#endif
    return;
  }
#if defined(__CUDA_ARCH__)
  const std::uint64_t second = lane == kLL128Lanes - 1 ? d.flag : w[1];
  asm volatile(
      "{ .reg .u64 g; cvta.to.global.u64 g, %0; st.volatile.global.v2.u64 [g], {%1, %2}; }" ::"l"(
          at),
      "l"(w[0]), "l"(second)
      : "memory");
#else
  for (int k = 0; k < kLL128DataWords; ++k) storeRelaxed(at + k, w[k]);
  storeRelease(at + kLL128LineWords - 1, d.flag);
#endif
}

BRAID_DEVICE_FN bool wordAligned(const void* p) {
  return (reinterpret_cast<std::uintptr_t>(p) & 7) == 0;
}

/// Word w of the `bytes` at mem (the last one may be short: its missing bytes read as 0).
BRAID_DEVICE_FN std::uint64_t loadWord(const char* mem, std::size_t w, std::size_t bytes,
                                       bool aligned) {
  const std::size_t at = 8 * w;
  std::uint64_t v = 0;
  if (aligned && at + 8 <= bytes) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const std::uint64_t*>(mem + at);
#else
    __builtin_memcpy(&v, mem + at, 8);
    return v;
#endif
  }
  for (std::size_t k = 0; k < 8 && at + k < bytes; ++k)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(mem[at + k])) << (8 * k);
  return v;
}

BRAID_DEVICE_FN void storeWord(char* mem, std::size_t w, std::size_t bytes, bool aligned,
                               std::uint64_t v) {
  const std::size_t at = 8 * w;
  if (aligned && at + 8 <= bytes) {
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<std::uint64_t*>(mem + at) = v;
#else
    __builtin_memcpy(mem + at, &v, 8);
#endif
    return;
  }
  for (std::size_t k = 0; k < 8 && at + k < bytes; ++k)
    mem[at + k] = static_cast<char>((v >> (8 * k)) & 0xff);
}

/// out0 (and out1) = combine(acc, local), word by word, where at least one operand is a chunk
/// of lines. Thread groups take lines in turn, kUnroll of them loaded before the first is used.
template <class Combine>
BRAID_DEVICE_LOOP void lineLoop(const ChannelContext& c, Dst out0, Dst out1, Src acc, Src local,
                                std::size_t bytes, Combine combine) {
  if (aborted(c)) return;  // the peers may never write these lines
  const bool ll128 = c.protocol == Protocol::kLL128;
  const int lanes = ll128 ? kLL128Lanes : 1;
  const int unitWords = ll128 ? kLL128DataWords : 1;
  const int laneWords = ll128 ? kLaneWords : 1;
  const std::size_t words = (bytes + 7) / 8;
  const std::size_t units = words == 0 ? 1 : (words + unitWords - 1) / unitWords;
  const bool aligned = wordAligned(out0.mem) && wordAligned(out1.mem) && wordAligned(acc.mem) &&
                       wordAligned(local.mem);
  const std::size_t groups = static_cast<std::size_t>(c.block.threads / lanes);
  const int lane = c.block.thread % lanes;
  bool gaveUp = false;
  for (std::size_t u0 = static_cast<std::size_t>(c.block.thread / lanes); u0 < units && !gaveUp;
       u0 += kUnroll * groups) {
    // Every load of kUnroll units first (lines and memory operands alike), then the waits.
    LineWords ra[kUnroll], rl[kUnroll];
    BRAID_UNROLL
    for (int k = 0; k < kUnroll; ++k) {
      const std::size_t u = u0 + k * groups;
      if (u >= units) break;
      for (int j = 0; j < laneWords; ++j) {
        const int at = lane * laneWords + j;
        const std::size_t w = u * unitWords + at;
        if (at >= unitWords || w >= words) continue;
        if (acc.mem != nullptr) ra[k].w[j] = loadWord(acc.mem, w, bytes, aligned);
        if (local.mem != nullptr) rl[k].w[j] = loadWord(local.mem, w, bytes, aligned);
      }
      if (acc.lines != nullptr) loadLine(acc, u, lane, ra[k]);
      if (local.lines != nullptr) loadLine(local, u, lane, rl[k]);
    }
    BRAID_UNROLL
    for (int k = 0; k < kUnroll; ++k) {
      const std::size_t u = u0 + k * groups;
      if (u >= units) break;
      if ((acc.lines != nullptr && !awaitLine(c, acc, u, lane, ra[k])) ||
          (local.lines != nullptr && !awaitLine(c, local, u, lane, rl[k]))) {
        gaveUp = true;
        break;
      }
      std::uint64_t out[kLaneWords];
      for (int j = 0; j < laneWords; ++j) {
        const int at = lane * laneWords + j;
        const std::size_t w = u * unitWords + at;
        out[j] = 0;
        if (at >= unitWords || w >= words) continue;  // the flag's place, or past the chunk
        out[j] = combine(acc.given() ? ra[k].w[j] : 0, rl[k].w[j]);
        if (out0.mem != nullptr) storeWord(out0.mem, w, bytes, aligned, out[j]);
        if (out1.mem != nullptr) storeWord(out1.mem, w, bytes, aligned, out[j]);
      }
      if (out0.lines != nullptr) storeLine(out0, u, lane, out);
      if (out1.lines != nullptr) storeLine(out1, u, lane, out);
    }
  }
  if (gaveUp) c.shared->aborted = 1;
}

/// The combine of a copy: the local word.
struct CopyWord {
  BRAID_DEVICE_FN std::uint64_t operator()(std::uint64_t, std::uint64_t local) const {
    return local;
  }
};

/// The combine of a reduce: post(acc OP pre(local)) for each element of the word.
template <int D, class Op>
struct ReduceWord {
  cuda::ElementParams<D> p;
  BRAID_DEVICE_FN std::uint64_t operator()(std::uint64_t acc, std::uint64_t local) const {
    return reduceUnit<D, Op>(p, acc, local);
  }
};

BRAID_DEVICE_FN bool anyLines(const Dst& a, const Dst& b, const Src& c, const Src& d) {
  return a.lines != nullptr || b.lines != nullptr || c.lines != nullptr || d.lines != nullptr;
}

/// dst (and dst2) = src, `bytes` bytes, by the channel's threads, over any protocol.
BRAID_DEVICE_FN void copyStep(const ChannelContext& c, Dst dst, Dst dst2, Src src,
                              std::size_t bytes) {
  if (aborted(c)) return;  // the waits no longer hold: touch no slot and no buffer
  if (!anyLines(dst, dst2, src, Src{}))
    return copyBytes(c.block, dst.mem, dst2.mem, src.mem, bytes);
  lineLoop(c, dst, dst2, Src{}, src, bytes, CopyWord{});
}

/// out0[i] (and out1[i]) = post(acc[i] OP pre(local[i])) for i < n elements of D, by the
/// channel's threads, over any protocol; acc not given: post(pre(local[i])).
template <int D, class Op>
BRAID_DEVICE_FN void reduceStep(const ChannelContext& c, const cuda::ElementParams<D>& p, Dst out0,
                                Dst out1, Src acc, Src local, std::size_t n) {
  if (aborted(c)) return;
  if (!anyLines(out0, out1, acc, local))
    return reduceElements<D, Op>(c.block, p, out0.mem, out1.mem, acc.mem, local.mem, n);
  lineLoop(c, out0, out1, acc, local, n * sizeof(typename ElementType<D>::Storage),
           ReduceWord<D, Op>{p});
}

}  // namespace braid::kernels::device
