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
struct LinkCosts {
  LinkCost local, shm, tcp;
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
};

/// Estimated time of `args` run by `algorithm` on `nranks` ranks, in microseconds.
double estimateCollectiveUs(const CommCostModel& model, int nranks, const CollArgs& args,
                            const char* algorithm);
/// Estimated time of a batch of point-to-point transfers of `bytes` in all, over `transfers`
/// transfers, in microseconds.
double estimateP2pUs(const CommCostModel& model, size_t transfers, size_t bytes);

}  // namespace braid
