// Starts the ranks, waits for them, and tears the whole job down when one fails, when the
// timeout passes, or when braidrun itself is asked to stop.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "launch_options.h"

namespace braidrun {

/// The rendezvous settings shared by every rank of one run.
struct Rendezvous {
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  std::string secret;  ///< 32 lowercase hex characters
};

/// The environment of rank `rank` of the run: the parent's environment without the variables
/// braidrun sets, then those variables (RANK, WORLD_SIZE, ..., BRAID_COMM_SECRET).
std::vector<std::string> rankEnvironment(char** parentEnv, const Rendezvous& rendezvous, int rank,
                                         int nranks);

/// Runs the job to completion and returns braidrun's exit status: 0 if every rank exited 0,
/// else the first failure's status (128+signal for a signal, 124 for --timeout).
int superviseRanks(const LaunchOptions& options, const Rendezvous& rendezvous, char** parentEnv);

}  // namespace braidrun
