// One channel of one rank of a collective: checks what the schedules cannot run, picks the
// schedule and reports how the channel ended. The CUDA kernel (kernels/cuda/device_collective.cu)
// runs it as block `channel` of a launch; the emulation (kernels/device/emulation.h) as a CPU
// thread.
#pragma once

#include "kernels/device/tree_schedules.h"

namespace braid::kernels::device {

/// Why these arguments cannot run, or nullptr. Checked on the host before a launch.
inline const char* unsupported(const CollectiveArgs& a) {
  if (a.comm.nranks < 1 || a.comm.rank < 0 || a.comm.rank >= a.comm.nranks)
    return "rank outside the communicator";
  if (a.comm.channels < 1) return "no channel";
  if (static_cast<std::size_t>(a.collective) >= kNumCollectives)
    return "collective outside the five";
  if (a.op.dtype < 0 || a.op.dtype >= dtype::kCount) return "data type outside NCCL's";
  if (a.root < 0 || a.root >= a.comm.nranks) return "root outside the communicator";
  if (a.algorithm != Algorithm::kRing && a.collective != Collective::kAllReduce)
    return "tree and one-shot schedules are all-reduce schedules";
  if (a.algorithm == Algorithm::kOneShot && a.comm.nranks > kOneShotMaxRanks)
    return "one-shot all-reduce runs on at most 16 ranks";
  if (a.comm.nranks > 1 && (a.comm.inbox == nullptr || a.comm.outbox == nullptr)) return "no FIFOs";
  return nullptr;
}

/// Why this launch cannot run, or nullptr: its items one by one, and one data type and op for
/// all (the kernel is compiled per pair).
inline const char* unsupported(const LaunchArgs& l) {
  if (l.count < 1 || l.count > kMaxLaunchItems) return "a launch runs 1 to 16 collectives";
  for (int i = 0; i < l.count; ++i) {
    if (const char* why = unsupported(l.items[i])) return why;
    if (l.items[i].op.dtype != l.items[0].op.dtype || l.items[i].op.op != l.items[0].op.op)
      return "the collectives of one launch share one data type and op";
  }
  return nullptr;
}

/// The leader's first act on a channel: this call's fingerprint into every FIFO of the channel,
/// as sender (in each peer's inbox) and as receiver (in its own).
BRAID_DEVICE_FN void publishCall(const CollectiveArgs& a, int channel) {
  const DeviceComm& m = a.comm;
  if (m.nranks < 2 || m.inbox == nullptr || m.outbox == nullptr) return;
  for (int p = 0; p < m.nranks; ++p) {
    if (p == m.rank) continue;
    const int at = channel * m.nranks + p;
    for (int i = 0; i < 3; ++i) {
      storeRelaxed(&m.outbox[at]->calls[0][i], a.call[i]);
      storeRelaxed(&m.inbox[at]->calls[1][i], a.call[i]);
    }
  }
}

/// How a channel that gave up ended: kChannelMismatch (and its report) when the peer it waited
/// for is in another call of the same number, or already past this one (it had nothing more to
/// send or take here); kChannelAborted when it is late, gone or stuck elsewhere.
BRAID_DEVICE_FN int stallVerdict(const CollectiveArgs& a, int channel, const BlockShared& s) {
  const DeviceFifo* f = s.stalled;
  if (f == nullptr || a.call[0] == 0) return kChannelAborted;
  std::uint64_t theirs[3];
  bool same = true;
  for (int i = 0; i < 3; ++i) {
    theirs[i] = loadRelaxed(&f->calls[s.stalledOnSender ? 0 : 1][i]);
    same = same && theirs[i] == a.call[i];
  }
  if (!(theirs[0] > a.call[0] || (theirs[0] == a.call[0] && !same))) return kChannelAborted;
  const DeviceComm& m = a.comm;
  if (m.report != nullptr) {
    int peer = -1;
    for (int p = 0; p < m.nranks; ++p) {
      const int at = channel * m.nranks + p;
      if (p != m.rank && (s.stalledOnSender ? m.inbox[at] : m.outbox[at]) == f) peer = p;
    }
    std::uint64_t* r = m.report + channel * kReportWords;
    r[0] = static_cast<std::uint64_t>(peer);
    for (int i = 0; i < 3; ++i) {
      r[1 + i] = a.call[i];
      r[4 + i] = theirs[i];
    }
    r[7] = static_cast<std::uint64_t>(s.stalledOnSender);
    fenceBeforePublish();  // the report before the status word that points to it
  }
  return kChannelMismatch;
}

template <int D, class Op>
BRAID_DEVICE_FN int runChannel(const CollectiveArgs& a, int channel, const Block& block,
                               BlockShared* shared) {
  if (block.leader()) {
    shared->aborted = 0;
    shared->stalled = nullptr;
    publishCall(a, channel);
  }
  block.sync();
  char* scratch = a.comm.scratch + channel * a.comm.scratchBytesPerChannel;
  ChannelContext c{&a.comm, a.protocol, channel, block, shared, scratch};
  c.args = &a;
  // A scalar in device memory is read where it is, in stream order (what earlier work wrote).
  c.scalar = a.scalarOnDevice != nullptr ? static_cast<const unsigned char*>(a.scalarOnDevice)
                                         : a.op.scalar;
  if (a.count > 0) {
    switch (a.collective) {
      case Collective::kAllReduce:
        if (a.algorithm == Algorithm::kTree)
          treeAllReduce<D, Op>(c);
        else if (a.algorithm == Algorithm::kOneShot)
          oneShotAllReduce<D, Op>(c);
        else
          ringReduce<D, Op>(c, true);
        break;
      case Collective::kReduceScatter:
        ringReduce<D, Op>(c, false);
        break;
      case Collective::kAllGather:
        ringAllGather<D>(c);
        break;
      case Collective::kBroadcast:
        ringBroadcast<D>(c);
        break;
      case Collective::kReduce:
        ringReduceToRoot<D, Op>(c);
        break;
    }
  }
  block.sync();
  if (!aborted(c)) return kChannelOk;
  return block.leader() ? stallVerdict(a, channel, *shared) : kChannelAborted;
}

/// Block `channel` of a launch: each item in order (an item with fewer channels leaves this block
/// out), stopping at the first that gave up.
template <int D, class Op>
BRAID_DEVICE_FN int runLaunch(const LaunchArgs& l, int channel, const Block& block,
                              BlockShared* shared) {
  for (int i = 0; i < l.count; ++i) {
    if (channel >= l.items[i].comm.channels) continue;
    const int result = runChannel<D, Op>(l.items[i], channel, block, shared);
    if (result != kChannelOk) return result;
  }
  return kChannelOk;
}

}  // namespace braid::kernels::device
