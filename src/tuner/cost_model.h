// The alpha-beta cost model: an operation's time as latency per step (alpha), time per byte moved
// between ranks (beta) and per byte reduced (gamma), with each algorithm's step and byte counts
// and a per-algorithm, per-transport correction fitted to measurement (docs/performance.md,
// "Tuner"). It ranks the algorithms of every collective (select.cc) and answers
// ncclGroupSimulateEnd. The constants are per transport; where they come from: cost_source.h.
#pragma once

#include <string>

#include "algorithms/algorithm.h"
#include "transports/transport.h"

namespace braid {

/// One transport's constants.
struct LinkCost {
  double alphaUs = 0;     ///< latency of one step (post a slot, the peer sees it)
  double gbps = 1;        ///< bytes moved between ranks, GB/s (1e9 B/s)
  double reduceGbps = 1;  ///< bytes reduced, GB/s
};

/// The constants of the three transports. File format (BRAID_TUNER_FILE and the per-host cache),
/// one line per transport (others keep their values; '#' starts a comment):
///   shm alpha_us=1.5 gbps=6 reduce_gbps=12
/// and one line of the collective kernels' constants (DeviceCosts, above).
/// The constants of the collective kernels' model (tuner/device_schedule.h; docs/cuda.md,
/// "Collective kernels from the API"); the tuner file's line
///   device launch_us=4 hop_simple_us=2 hop_ll_us=0.8 hop_ll128_us=1.2 channel_gbps=40
///          ll_efficiency=0.4 ll128_efficiency=0.9 channel_bytes=262144
/// Not yet measured on a GPU: tools/gpu-check prints the figures to calibrate them with.
struct DeviceCosts {
  double launchUs = 4.0;            ///< a kernel launch and its first poll
  double hopUsSimple = 2.0;         ///< one chunk handed to a peer: fence, flag, the peer's poll
  double hopUsLL = 0.8;             ///< one LL line: no fence, no second round trip
  double hopUsLL128 = 1.2;          ///< one LL128 line: as LL, with a warp's agreement on the flag
  double channelGBps = 40.0;        ///< one block's copy or reduce bandwidth under Simple
  double llEfficiency = 0.4;        ///< LL moves half flags and polls every line
  double ll128Efficiency = 0.9;     ///< LL128 moves 1/16 flags (NCCL's LL128: ~95% of Simple)
  double bytesPerChannel = 262144;  ///< below this a further channel costs more than it brings
};
inline constexpr int kDeviceCostFigures = 8;
DeviceCosts defaultDeviceCosts();
/// The device constants as the figures that travel from rank 0 (kDeviceCostFigures), and back.
void deviceCostFigures(const DeviceCosts& costs, double* figures);
DeviceCosts deviceCostsFromFigures(const double* figures);

struct LinkCosts {
  LinkCost local, shm, tcp;
  DeviceCosts device;
};
/// The built-in constants (the reference machine, docs/results.md).
LinkCosts defaultLinkCosts();
/// Parses a tuner file's text into `costs`; false with `error` naming the line if malformed.
bool parseLinkCosts(const std::string& text, LinkCosts* costs, std::string* error);
/// The text parseLinkCosts reads back into the same constants.
std::string formatLinkCosts(const LinkCosts& costs);

/// The name of a communicator's slowest connection's class (LinkClass: transports/transport.h).
const char* linkClassName(LinkClass c);

/// What the model needs to know about a communicator; the same on every rank of it (commInit
/// builds it from rank 0's constants and the allgathered peer table).
struct CommCostModel {
  LinkClass link = LinkClass::kShm;
  LinkCost cost;                  ///< that transport's constants
  double oversubscribe = 1;       ///< ranks on the busiest host per core (>= 1)
  double slotBytes = 512 * 1024;  ///< FIFO slot size (BRAID_SLOT_BYTES): the pipelining unit
  int hosts = 1;                  ///< hosts the ranks are on
  int ranksPerHost = 0;           ///< ranks on each host when every host has as many, else 0
  LinkCost withinHost;            ///< the constants of the transport between ranks of one host
  DeviceCosts device;             ///< the collective kernels' constants (rank 0's, as the rest)
};

/// Estimated time of `args` run by `algorithm` on `nranks` ranks, in microseconds: the formula
/// and shape its traits declare (algorithm_traits.h).
double estimateCollectiveUs(const CommCostModel& model, int nranks, const CollArgs& args,
                            const Algorithm& algorithm);
/// Estimated time of a batch of point-to-point transfers of `bytes` in all, over `transfers`
/// transfers, in microseconds.
double estimateP2pUs(const CommCostModel& model, size_t transfers, size_t bytes);

}  // namespace braid
