// Which schedule, protocol and channel count a collective kernel runs (kernels/device): a cost
// model with device constants, under NCCL_ALGO and NCCL_PROTO. Every rank computes the same
// answer from the same arguments, which the kernels need: the ranks' blocks meet in the FIFOs
// of the channels they use.
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/algorithm.h"
#include "kernels/device/fifo.h"
#include "tuner/cost_model.h"

namespace braid {

struct DeviceSchedule {
  kernels::device::Algorithm algorithm = kernels::device::Algorithm::kRing;
  kernels::device::Protocol protocol = kernels::device::Protocol::kSimple;
  int channels = 1;
  double estimateUs = 0;
  /// Threads per block: enough for one pass of the data loops over a channel's share (64 bytes
  /// a thread: four 16-byte packs), from 64 to 256; a small call's block syncs fewer warps.
  int threads = 256;
};

/// NCCL_ALGO's name of a kernel schedule: Ring, Tree, OneShot.
const char* deviceAlgorithmName(kernels::device::Algorithm a);
/// NCCL_PROTO's name of a kernel protocol: Simple, LL, LL128.
const char* deviceProtocolName(kernels::device::Protocol p);
/// "Ring/LL128 kernel" and the like: a kernel call's algorithm in its fingerprint and the
/// flight recorder (a string that lives as long as the program).
const char* deviceScheduleName(kernels::device::Algorithm a, kernels::device::Protocol p);

/// The schedule for `coll` of `bytes` (the whole buffer: all-reduce, broadcast, reduce; the
/// gathered side: all-gather, reduce-scatter) on `nranks`, using at most `maxChannels`.
/// `algoEnv` and `protoEnv` are NCCL_ALGO and NCCL_PROTO (Ring, Tree, OneShot; Simple, LL, LL128).
DeviceSchedule chooseDeviceSchedule(CollType coll, size_t bytes, int nranks, int maxChannels,
                                    const std::string& algoEnv, const std::string& protoEnv,
                                    const DeviceCosts& costs = defaultDeviceCosts());

}  // namespace braid
