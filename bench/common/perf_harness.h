// The measuring loop of the perf tests (nccl-tests' TimeTest/BenchTime/startColl), run by
// every thread for the ranks it drives. Buffers are host memory and the stream is NULL, so each
// collective (or each ncclGroupEnd) has completed when it returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collective.h"
#include "launch_env.h"
#include "perf_options.h"
#include "rank_group.h"
#include "report.h"
#include "watchdog.h"

namespace braid::bench {

/// What every thread of a process shares.
struct PerfRun {
  const PerfOptions& options;
  const CollectiveTest& test;
  const LaunchInfo& launch;
  RankGroup& group;
  Report& report;
  Watchdog& watchdog;
  int nranks = 1;            ///< over all processes
  std::size_t maxBytes = 0;  ///< -e, after the memory limit
};

/// One thread: the ranks it drives and their buffers, plus its running totals.
struct ThreadState {
  int thread = 0;
  int firstRank = 0;              ///< global rank of comms[0]
  std::vector<ncclComm_t> comms;  ///< one per rank driven (-g)
  std::vector<char*> sendBases;   ///< allocations, before -u misalignment
  std::vector<char*> recvBases;
  std::size_t bufferBytes = 0;  ///< usable bytes of each allocation

  // Totals for the footer.
  int errors = 0;  ///< checked runs with wrong elements on this thread
  double busBwSum = 0;
  int busBwCount = 0;

  ThreadComms view() const {
    return {thread, comms.data(), static_cast<int>(comms.size()), firstRank};
  }
  bool isMain(const PerfRun& run) const { return thread == 0 && run.launch.proc == 0; }
};

/// Runs every (type, op, root) the options select, all sizes each: nccl-tests' runTest.
void runThreadTests(PerfRun& run, ThreadState& state);

}  // namespace braid::bench
