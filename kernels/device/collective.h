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

template <int D, class Op>
BRAID_DEVICE_FN int runChannel(const CollectiveArgs& a, int channel, const Block& block,
                               BlockShared* shared) {
  if (block.leader()) shared->aborted = 0;
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
  return aborted(c) ? kChannelAborted : kChannelOk;
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
