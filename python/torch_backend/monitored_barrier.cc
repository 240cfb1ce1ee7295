// ProcessGroupBraid::monitoredBarrier: gloo's monitored barrier, with gloo's messages. Every rank
// other than 0 announces its arrival and waits for rank 0's release; rank 0 waits until every
// rank has arrived or the timeout has passed, and then names the ranks that did not arrive, so
// that a hung job says which rank hangs. It runs through the group's store, not through Braid:
// the barrier exists to diagnose ranks that stopped taking part in collectives, and a store
// key needs nothing of the silent rank's communicator.
#include <chrono>
#include <string>
#include <vector>

#include <c10/util/Exception.h>

#include "process_group_braid.h"
#include "store_poll.h"

namespace braid_torch {

namespace {

using Clock = std::chrono::steady_clock;

std::string arrivalKey(uint64_t call, int rank) {
  return "braid_monitored_barrier/" + std::to_string(call) + "/arrived/" + std::to_string(rank);
}
std::string releaseKey(uint64_t call) {
  return "braid_monitored_barrier/" + std::to_string(call) + "/released";
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

void ProcessGroupBraid::monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) {
  requireOpen("monitoredBarrier");
  const uint64_t call = monitoredBarriers_++;
  // The call's timeout, else the group's (the communicator's deadline; none: wait for ever).
  std::chrono::milliseconds timeout = opts.timeout;
  if (timeout == c10d::kUnsetTimeout) {
    timeout = std::chrono::milliseconds(static_cast<int64_t>(commTimeoutSeconds() * 1000.0));
    if (timeout.count() <= 0) timeout = std::chrono::milliseconds::max();
  }
  const auto start = Clock::now();
  auto expired = [&] {
    return timeout != std::chrono::milliseconds::max() && Clock::now() - start >= timeout;
  };
  const int rank = getRank();
  const int size = getSize();

  if (rank != 0) {
    // As in gloo, only rank 0 enforces the timeout, so that it is rank 0 that reports the
    // missing ranks; the others wait for its release within the group's deadline.
    store_->set(arrivalKey(call, rank), std::vector<uint8_t>{1});
    const double groupSeconds = commTimeoutSeconds();
    StorePoll poll;
    while (!store_->check({releaseKey(call)})) {
      if (groupSeconds > 0 && Clock::now() - start >= std::chrono::duration<double>(groupSeconds)) {
        TORCH_CHECK(false, "Rank ", rank,
                    " successfully reached monitoredBarrier, but received errors while waiting"
                    " for send/recv from rank 0. Please check rank 0 logs for faulty rank.\n"
                    " Original exception: \nbraid: no release from rank 0 within the group's "
                    "timeout of ",
                    groupSeconds, " s");
      }
      poll.pause();
    }
    return;
  }

  std::vector<int> missing;
  for (int r = 1; r < size; ++r) missing.push_back(r);
  if (timeout.count() == 0 && !missing.empty() && !waitAllRanks) {
    TORCH_CHECK(false, "Rank 0 timed out in monitoredBarrier after 0 ms.\n",
                "No ranks successfully processed in monitoredBarrier.");
  }
  StorePoll poll;
  while (!missing.empty()) {
    std::erase_if(missing, [&](int r) { return store_->check({arrivalKey(call, r)}); });
    if (missing.empty() || expired()) break;
    poll.pause();
  }
  if (!missing.empty()) {
    if (waitAllRanks) {
      TORCH_CHECK(false, "[Rank 0]: Ranks ", joinRanks(missing),
                  " failed to pass monitoredBarrier in ", timeout.count(), " ms");
    }
    // Without waitAllRanks gloo stops at the first rank, in rank order, that did not arrive.
    TORCH_CHECK(false, "[Rank 0]: Rank ", missing.front(), " failed to pass monitoredBarrier in ",
                timeout.count(), " ms");
  }
  store_->set(releaseKey(call), std::vector<uint8_t>{1});
  for (int r = 1; r < size; ++r) store_->deleteKey(arrivalKey(call, r));
}

}  // namespace braid_torch
