// The alpha-beta cost model: an operation's time as latency per step (alpha), time per byte moved
// between ranks (beta) and per byte reduced (gamma), with each algorithm's step and byte counts
// (docs/performance.md). It answers ncclGroupSimulateEnd. The constants are per transport: the
// defaults below were measured on the reference machine (docs/measurements.md); a file named by
// BRAID_TUNER_FILE replaces them with a host's own figures.
#pragma once

#include <string>

#include "algorithms/algorithm.h"

namespace braid {

/// One transport's constants.
struct LinkCost {
  double alphaUs = 0;     ///< latency of one step (post a slot, the peer sees it)
  double gbps = 1;        ///< bytes moved between ranks, GB/s (1e9 B/s)
  double reduceGbps = 1;  ///< bytes reduced, GB/s
};

/// The constants of the three transports, from BRAID_TUNER_FILE if set, else the defaults.
/// File format, one line per transport (others keep their defaults; '#' starts a comment):
///   shm alpha_us=1.5 gbps=6 reduce_gbps=12
struct LinkCosts {
  LinkCost local, shm, tcp;
};
const LinkCosts& linkCosts();
/// Parses a tuner file's text into `costs`; false with `error` naming the line if malformed.
bool parseLinkCosts(const std::string& text, LinkCosts* costs, std::string* error);

/// The constants for `comm`: its slowest transport (TCP if any peer is reached over TCP, then
/// shared memory, then same-process), with alpha scaled by how far its local ranks outnumber the
/// cores (a step waits for a peer that must first be scheduled).
LinkCost linkCostFor(const ncclComm& comm);

/// Estimated time of `args` run by `algorithm` on `comm`, in microseconds.
double estimateCollectiveUs(const ncclComm& comm, const CollArgs& args, const char* algorithm);
/// Estimated time of a batch of point-to-point transfers of `bytes` in all, over `transfers`
/// transfers, in microseconds.
double estimateP2pUs(const ncclComm& comm, size_t transfers, size_t bytes);

}  // namespace braid
