// The collective kernels' schedule choice (device_schedule.h).
#include "tuner/device_schedule.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/device/tree_schedules.h"
#include "tuner/algo_filter.h"

namespace braid {
namespace {

using DeviceAlgorithm = kernels::device::Algorithm;
using kernels::device::Protocol;

/// Hops on the critical path and bytes one rank's blocks move (sent plus reduced) for one call.
void shape(CollType coll, DeviceAlgorithm a, size_t bytes, int n, double* hops, double* moved) {
  const double s = static_cast<double>(bytes);
  const double part = (n - 1) / static_cast<double>(n);
  const double depth = std::ceil(std::log2(std::max(n, 2)));
  switch (a) {
    case DeviceAlgorithm::kOneShot:
      *hops = 1;
      *moved = (n - 1) * s + (n - 1) * s;  // send the whole buffer to each peer, reduce n - 1
      return;
    case DeviceAlgorithm::kTree:
      *hops = 2 * depth;
      *moved = 2 * s + s;  // up (reduce) and down (copy), each pipelined
      return;
    case DeviceAlgorithm::kRing:
      break;
  }
  const bool twoPhases = coll == CollType::kAllReduce;
  *hops = (twoPhases ? 2 : 1) * (n - 1);
  *moved = (twoPhases ? 2 : 1) * part * s;
}

}  // namespace

const char* deviceAlgorithmName(kernels::device::Algorithm a) {
  switch (a) {
    case kernels::device::Algorithm::kRing:
      return "Ring";
    case kernels::device::Algorithm::kTree:
      return "Tree";
    case kernels::device::Algorithm::kOneShot:
      return "OneShot";
  }
  return "?";
}

const char* deviceProtocolName(kernels::device::Protocol p) {
  switch (p) {
    case kernels::device::Protocol::kSimple:
      return "Simple";
    case kernels::device::Protocol::kLL:
      return "LL";
    case kernels::device::Protocol::kLL128:
      return "LL128";
  }
  return "?";
}

const char* deviceScheduleName(kernels::device::Algorithm a, kernels::device::Protocol p) {
  static const char* const names[3][3] = {
      {"Ring/Simple kernel", "Ring/LL kernel", "Ring/LL128 kernel"},
      {"Tree/Simple kernel", "Tree/LL kernel", "Tree/LL128 kernel"},
      {"OneShot/Simple kernel", "OneShot/LL kernel", "OneShot/LL128 kernel"}};
  const int ai = static_cast<int>(a), pi = static_cast<int>(p);
  return ai >= 0 && ai < 3 && pi >= 0 && pi < 3 ? names[ai][pi] : "? kernel";
}

DeviceSchedule chooseDeviceSchedule(CollType coll, size_t bytes, int nranks, int maxChannels,
                                    const std::string& algoEnv, const std::string& protoEnv,
                                    const DeviceCosts& costs) {
  const std::string_view algoSpec = algoSpecFor(algoEnv, coll);
  const std::string_view protoSpec = algoSpecFor(protoEnv, coll);
  DeviceSchedule best;
  best.estimateUs = std::numeric_limits<double>::infinity();
  const size_t perChannel = std::max<size_t>(static_cast<size_t>(costs.bytesPerChannel), 1);
  const size_t wanted = (bytes + perChannel - 1) / perChannel;
  const int channels = static_cast<int>(std::clamp<size_t>(wanted, 1, std::max(maxChannels, 1)));
  for (DeviceAlgorithm a :
       {DeviceAlgorithm::kRing, DeviceAlgorithm::kTree, DeviceAlgorithm::kOneShot}) {
    if (a != DeviceAlgorithm::kRing && coll != CollType::kAllReduce) continue;
    if (a == DeviceAlgorithm::kOneShot && nranks > kernels::device::kOneShotMaxRanks) continue;
    if (!algoSpec.empty() && !allowedBySpec(algoSpec, deviceAlgorithmName(a))) continue;
    for (Protocol p : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
      if (!protoSpec.empty() && !allowedBySpec(protoSpec, deviceProtocolName(p))) continue;
      double hops = 0, moved = 0;
      shape(coll, a, bytes, nranks, &hops, &moved);
      const double efficiency = p == Protocol::kLL      ? costs.llEfficiency
                                : p == Protocol::kLL128 ? costs.ll128Efficiency
                                                        : 1.0;
      const double hopUs = p == Protocol::kLL      ? costs.hopUsLL
                           : p == Protocol::kLL128 ? costs.hopUsLL128
                                                   : costs.hopUsSimple;
      const double gbps = costs.channelGBps * channels * efficiency;
      const double us = costs.launchUs + hops * hopUs + moved / (gbps * 1e3);
      if (us < best.estimateUs) best = {a, p, channels, us};
    }
  }
  if (best.estimateUs == std::numeric_limits<double>::infinity()) {
    best = {};  // NCCL_ALGO or NCCL_PROTO ruled everything out: ring, Simple
    best.channels = channels;
  }
  const size_t share = bytes / static_cast<size_t>(best.channels);
  best.threads = static_cast<int>(std::clamp<size_t>((share / 64 + 31) / 32 * 32, 64, 256));
  return best;
}

}  // namespace braid
