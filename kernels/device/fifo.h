// What the blocks of two ranks share for one direction of one channel: a FIFO of slots in the
// receiver's memory, with the two counters that hand slots back and forth, and the descriptor of
// one launch of a collective on one rank.
//
// Three protocols use the same FIFO and the same step numbers, so successive calls may use any:
// - Simple: the sender writes a chunk into slot (step % slots), then publishes `tail = step + 1`
//   with a release store behind a fence; the receiver's acquire load of `tail` makes the chunk
//   visible. One flag per chunk: bandwidth.
// - LL (low latency): each 8-byte word of a slot's line array carries 4 bytes of data and a
//   4-byte flag (step + 1); the receiver polls the words themselves, so there is no fence and no
//   second round trip for the flag: latency. Half of the memory moved is flags. Two words make
//   one 16-byte line (NCCL's ncclLLFifoLine), which the GPU writes and reads in one access.
// - LL128: a line of 128 bytes carries 15 words of data and the step's 64-bit flag in its last
//   word (NCCL's LL128); the GPU writes a line with one warp store and reads it likewise, so a
//   flag that arrived vouches for its line: 1/16 of the memory moved is flags (kernels/device/
//   lines.h).
// In both, the receiver hands the slot back with `head = step + 1` (release) once it has read it,
// and the sender waits until `step - head < slots` before writing. The receiver is the only
// writer of `head`, its step number; the sender keeps its own step number in its own memory
// (DeviceComm::sent), both kept from one launch to the next. Under Simple `tail` follows it (a
// jump forward after LL steps is harmless: the receiver waits for `tail > step`). Once the
// receiver has read a launch's last chunk, nothing of that launch writes into its memory again,
// so a rank may free its FIFOs once its own launches are done.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/collective_type.h"
#include "kernels/ops.h"
#include "kernels/reduce.h"

namespace braid::kernels::device {

enum class Protocol : int { kSimple = 0, kLL = 1, kLL128 = 2 };
enum class Algorithm : int { kRing = 0, kTree = 1, kOneShot = 2 };
/// The host's enum of collectives (kernels/collective_type.h): one enum, no conversion.
using Collective = ::braid::CollType;

/// The header of one FIFO; its slots follow it in the same allocation, found by offsets from the
/// header (not pointers), so the header means the same in every process that maps it: a sender
/// in another process reaches the slots through its own mapping of the receiver's memory.
struct alignas(128) DeviceFifo {
  std::uint64_t tail;  ///< chunks published by the sender under Simple (LL lines carry their own
                       ///< flags); the sender's step count is its DeviceComm::sent
  char pad0[120];
  std::uint64_t head;  ///< chunks the receiver has read and handed back (its own step)
  char pad1[120];
  /// The fingerprint (CollectiveArgs::call) of the collective each end runs now on this
  /// channel: [0] written by the sender, [1] by the receiver, when they start it. A wait that
  /// gives up reads the other end's to tell a peer in another call (an operation mismatch) from
  /// one that is late or gone.
  std::uint64_t calls[2][3];
  char pad2[80];
  std::uint64_t simpleOffset;     ///< from the header: slots * simpleSlotBytes
  std::uint64_t linesOffset;      ///< from the header: slots * (llSlotBytes / 4) words, each
                                  ///< {flag << 32 | 4 data bytes}
  std::uint64_t ll128Offset;      ///< from the header: slots * ll128SlotBytes of 128-byte lines
  std::uint32_t slots;            ///< slots in flight, at least 2
  std::uint32_t simpleSlotBytes;  ///< a multiple of 16
  std::uint32_t llSlotBytes;      ///< data bytes per LL slot, a multiple of 16
  std::uint32_t ll128SlotBytes;   ///< line bytes per LL128 slot, a multiple of 256 (15/16 data)
};

/// An LL128 line: 16 words, the last one the flag.
inline constexpr std::uint32_t kLL128LineBytes = 128;
inline constexpr std::uint32_t kLL128DataBytes = 120;

/// The size of a FIFO's slots: the same on both ends of every FIFO of a communicator.
struct FifoShape {
  std::uint32_t slots = 4;
  std::uint32_t simpleSlotBytes = 4096;
  std::uint32_t llSlotBytes = 1024;
  std::uint32_t ll128SlotBytes = 4096;
};

/// The header a FIFO of `shape` starts with (counters at 0; the slots must start zeroed, so
/// that no LL flag matches before the sender writes it). LL128 lines start on 128 bytes.
inline DeviceFifo fifoHeader(const FifoShape& shape) {
  DeviceFifo f{};
  f.simpleOffset = sizeof(DeviceFifo);
  f.linesOffset = sizeof(DeviceFifo) + std::size_t{shape.slots} * shape.simpleSlotBytes;
  f.ll128Offset =
      (f.linesOffset + std::size_t{shape.slots} * (shape.llSlotBytes / 4) * 8 + 127) / 128 * 128;
  f.slots = shape.slots;
  f.simpleSlotBytes = shape.simpleSlotBytes;
  f.llSlotBytes = shape.llSlotBytes;
  f.ll128SlotBytes = shape.ll128SlotBytes;
  return f;
}

/// Bytes of one FIFO (header and slots) of `shape`, a multiple of 128.
inline std::size_t fifoBytes(const FifoShape& shape) {
  const DeviceFifo f = fifoHeader(shape);
  return (f.ll128Offset + std::size_t{shape.slots} * shape.ll128SlotBytes + 127) / 128 * 128;
}

/// The most bytes one chunk of any protocol holds (the one-shot's scratch per channel).
inline std::size_t maxChunkBytes(const FifoShape& shape) {
  const std::size_t ll128 = std::size_t{shape.ll128SlotBytes} / kLL128LineBytes * kLL128DataBytes;
  std::size_t most =
      shape.simpleSlotBytes > shape.llSlotBytes ? shape.simpleSlotBytes : shape.llSlotBytes;
  return most > ll128 ? most : ll128;
}

/// The LL flag of a step: never 0 (the value of fresh memory) for the first 2^32 - 1 steps.
BRAID_HOST_DEVICE inline std::uint32_t llFlag(std::uint64_t step) {
  return static_cast<std::uint32_t>(step + 1);
}

/// One rank's view of the FIFOs of a communicator: for channel c and peer p, inbox[c * nranks
/// + p] receives from p (it lives in this rank's memory) and outbox[c * nranks + p] is p's inbox
/// for this rank. A rank's own entries are unused.
struct DeviceComm {
  int rank = 0;
  int nranks = 1;
  int channels = 1;
  DeviceFifo* const* inbox = nullptr;
  DeviceFifo* const* outbox = nullptr;
  /// sent[c * nranks + p]: the chunks this rank has sent to p on channel c (its own memory).
  std::uint64_t* sent = nullptr;
  /// Per channel, at least one chunk of any protocol in this rank's memory: where the one-shot
  /// all-reduce keeps its own term of an in-place call.
  char* scratch = nullptr;
  std::size_t scratchBytesPerChannel = 0;
  /// Set non-zero by the host to make every wait give up (a peer is gone, a deadline passed);
  /// read as a relaxed atomic (host) or volatile (device) word.
  const int* abort = nullptr;
  /// A wait that sees no progress for this long gives up as if aborted (0: waits forever), so a
  /// peer that died or never launched fails the call instead of hanging the stream.
  std::uint64_t timeoutNs = 0;
  /// Per channel kReportWords words (mapped host memory, or nullptr): what a channel that
  /// reports kChannelMismatch saw: the peer, its own call, the peer's call, whether it waited
  /// for the peer's data (1) or for a free slot in the peer's memory (0).
  std::uint64_t* report = nullptr;
};
inline constexpr int kReportWords = 8;

/// One collective call on one rank. Counts are in elements of op.dtype: the whole buffer for
/// all-reduce, broadcast and reduce, each rank's part for all-gather (send count) and
/// reduce-scatter (receive count).
struct CollectiveArgs {
  Collective collective = Collective::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int root = 0;
  std::size_t count = 0;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  ReduceOp op;
  /// premulsum with its scalar in device memory (ncclScalarDevice): read by each block at its
  /// start, in stream order, instead of op.scalar.
  const void* scalarOnDevice = nullptr;
  /// The call's fingerprint (the host's Fingerprint words: number, count, kind and the rest;
  /// 0: none), published to the peers for the mismatch check of a wait that gives up.
  std::uint64_t call[3] = {};
  DeviceComm comm;
};

/// The collectives of one launch (a group's, on one communicator and stream, of one data type
/// and op), run one after another by every block; passed by value as the kernel's parameter
/// (so a CUDA graph captures it), hence bounded.
inline constexpr int kMaxLaunchItems = 16;
struct LaunchArgs {
  int count = 0;
  /// Threads per block, a multiple of 32 (0: the kernel's most); the emulation runs one.
  int threads = 0;
  CollectiveArgs items[kMaxLaunchItems];
  /// Blocks of the launch: the most channels any item uses.
  BRAID_HOST_DEVICE int channels() const {
    int c = 0;
    for (int i = 0; i < count; ++i) c = c > items[i].comm.channels ? c : items[i].comm.channels;
    return c;
  }
};

/// What a channel reports back (a word per channel the host reads after the launch).
enum ChannelStatus : int {
  kChannelOk = 0,
  kChannelAborted = 1,
  kChannelBadArguments = 2,
  kChannelSizeMismatch = 3,  ///< a receive met a send of another size (kernels/device/p2p.h)
  kChannelMismatch = 4,      ///< gave up waiting for a peer that is in another call
};

}  // namespace braid::kernels::device
