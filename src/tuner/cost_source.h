// Where the cost model's constants come from, and how a communicator agrees on them.
// Precedence: BRAID_TUNER_FILE, else the per-host cache, else a calibration (calibration.h)
// whose result is written to the cache; BRAID_TUNER_CALIBRATE=0 skips the cache and the
// calibration and uses the built-in constants. Only rank 0 of a communicator resolves them: its
// constants travel in the init's allgather, so every rank ranks the algorithms alike.
#pragma once

#include <string>
#include <vector>

#include "transports/transport.h"
#include "tuner/cost_model.h"

namespace braid {

/// This process's constants and where they came from ("file <path>", "cache <path>",
/// "calibration, cached at <path>", "built-in"), resolved at the first call.
struct HostCosts {
  LinkCosts costs;
  std::string source;
};
const HostCosts& hostLinkCosts();

/// The per-host cache: $BRAID_TUNER_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/braid/
/// tuner-<hostname>.txt; "" when neither HOME nor XDG_CACHE_HOME is set.
std::string tunerCachePath();
/// Reads a tuner file into `costs` (left as they were on failure); false with `error` saying why.
bool readLinkCostsFile(const std::string& path, LinkCosts* costs, std::string* error);
/// Writes `costs` to `path` through a temporary file and a rename, so that ranks starting
/// together never read a half-written file; creates the parent folder. False with `error`.
bool writeLinkCostsFile(const std::string& path, const LinkCosts& costs, std::string* error);

/// What rank 0 sends in the init's allgather (fixed size, plain data).
struct TunerWire {
  double figures[9] = {};                  ///< local, shm, tcp: alpha_us, gbps, reduce_gbps
  double device[kDeviceCostFigures] = {};  ///< the collective kernels' constants
  int32_t cores = 0;  ///< cores of rank 0's host (commInit: hostCores over all ranks)
  int32_t valid = 0;  ///< 1 from the rank whose constants count
};
TunerWire tunerWireFor(const LinkCosts& costs, int cores);

/// The communicator's model from rank 0's constants and the peer table: the slowest transport any
/// pair of ranks uses (by the transports' own rule, with `allowed` as BRAID_TRANSPORTS) and the
/// busiest host's ranks per core.
CommCostModel commCostModel(const TunerWire& rank0, const std::vector<PeerInfo>& peers,
                            const std::vector<std::string>& allowed);

}  // namespace braid
