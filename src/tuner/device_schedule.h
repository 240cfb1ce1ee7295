// Which schedule, protocol and channel count a collective kernel runs (kernels/device): a cost
// model with device constants, under NCCL_ALGO and NCCL_PROTO. Every rank computes the same
// answer from the same arguments, which the kernels need: the ranks' blocks meet in the FIFOs
// of the channels they use.
#pragma once

#include <cstddef>
#include <string>

#include "algorithms/algorithm.h"
#include "kernels/device/fifo.h"

namespace braid {

struct DeviceSchedule {
  kernels::device::Algorithm algorithm = kernels::device::Algorithm::kRing;
  kernels::device::Protocol protocol = kernels::device::Protocol::kSimple;
  int channels = 1;
  double estimateUs = 0;
};

/// The constants of the model (docs/cuda.md, "Collective kernels from the API"). Not yet
/// measured on a GPU: tools/gpu-check prints the figures to calibrate them with.
struct DeviceCosts {
  double launchUs = 4.0;         ///< a kernel launch and its first poll
  double hopUsSimple = 2.0;      ///< one chunk handed to a peer: fence, flag, the peer's poll
  double hopUsLL = 0.8;          ///< one LL line: no fence, no second round trip
  double hopUsLL128 = 1.2;       ///< one LL128 line: as LL, with a warp's agreement on the flag
  double channelGBps = 40.0;     ///< one block's copy or reduce bandwidth under Simple
  double llEfficiency = 0.4;     ///< LL moves half flags and polls every line
  double ll128Efficiency = 0.9;  ///< LL128 moves 1/16 flags (NCCL's LL128: ~95% of Simple)
  size_t bytesPerChannel = size_t{256} << 10;  ///< below this a further channel costs more than
                                               ///< it brings
};

/// NCCL_ALGO's name of a kernel schedule: Ring, Tree, OneShot.
const char* deviceAlgorithmName(kernels::device::Algorithm a);
/// NCCL_PROTO's name of a kernel protocol: Simple, LL, LL128.
const char* deviceProtocolName(kernels::device::Protocol p);

/// The schedule for `coll` of `bytes` (the whole buffer: all-reduce, broadcast, reduce; the
/// gathered side: all-gather, reduce-scatter) on `nranks`, using at most `maxChannels`.
/// `algoEnv` and `protoEnv` are NCCL_ALGO and NCCL_PROTO (Ring, Tree, OneShot; Simple, LL, LL128).
DeviceSchedule chooseDeviceSchedule(CollType coll, size_t bytes, int nranks, int maxChannels,
                                    const std::string& algoEnv, const std::string& protoEnv,
                                    const DeviceCosts& costs = {});

}  // namespace braid
