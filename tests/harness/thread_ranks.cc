// Ranks as threads of this process: one ncclUniqueId, one thread per rank.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "harness/harness_internal.h"

namespace braid::test {

namespace {

// Threads cannot be killed: after the deadline, stragglers get this much longer to notice their
// own timeouts before the whole test process gives up.
constexpr double kThreadGraceS = 15;

}  // namespace

RunReport runThreads(int nranks, const RankFn& fn, const RunOptions& options) {
  using internal::nowSeconds;
  RunReport report;
  report.shape = RankShape::kThreads;
  const double start = nowSeconds();
  internal::ScopedEnv env(options.env);

  ncclUniqueId id = options.id.value_or(ncclUniqueId{});
  if (!options.idFromEnvironment && !options.id) {
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      report.setupError = std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr);
      return report;
    }
  }

  report.ranks.resize(nranks);
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<bool> done(nranks, false);
  int finished = 0;
  std::vector<std::thread> threads;
  {
    internal::FailureCapture capture;
    for (int rank = 0; rank < nranks; rank++) {
      threads.emplace_back([&, rank] {
        RankResult result;
        ncclUniqueId myId = id;
        if (options.idFromEnvironment && ncclGetUniqueId(&myId) != ncclSuccess) {
          result.rank = rank;
          result.outcome = Outcome::kFailed;
          result.failures.push_back(std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr));
        } else {
          RankContext ctx(RankShape::kThreads, rank, nranks, myId);
          result = internal::runRankBody(ctx, fn);
        }
        result.where = "thread";
        // Published under the lock: the waiter may be reading the report at the deadline.
        std::lock_guard<std::mutex> lock(mutex);
        report.ranks[rank] = std::move(result);
        done[rank] = true;
        finished++;
        cv.notify_all();
      });
    }

    std::unique_lock<std::mutex> lock(mutex);
    auto waitUntil = [&](double seconds) {
      auto limit = std::chrono::steady_clock::now() +
                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                       std::chrono::duration<double>(seconds));
      return cv.wait_until(lock, limit, [&] { return finished == nranks; });
    };
    if (!waitUntil(options.timeoutS)) {
      RunReport late = report;  // what the stragglers look like at the deadline
      for (int r = 0; r < nranks; r++) {
        if (done[r]) continue;
        late.ranks[r].rank = r;
        late.ranks[r].where = "thread";
        late.ranks[r].outcome = Outcome::kTimedOut;
      }
      if (!waitUntil(kThreadGraceS)) {
        late.seconds = nowSeconds() - start;
        fprintf(stderr,
                "rank harness: threads still running %.0f s after the %.0f s deadline; they "
                "cannot be killed, so the test process ends here.\n%s\n",
                kThreadGraceS, options.timeoutS, late.describe().c_str());
        fflush(stderr);
        _exit(3);
      }
      // They did finish in the grace period: still a timeout for the test.
      for (int r = 0; r < nranks; r++) {
        if (late.ranks[r].outcome == Outcome::kTimedOut) {
          report.ranks[r].outcome = Outcome::kTimedOut;
          report.ranks[r].failures.push_back("finished only after the run's deadline");
        }
      }
    }
    lock.unlock();
    for (std::thread& t : threads) t.join();
  }
  report.seconds = nowSeconds() - start;
  return report;
}

}  // namespace braid::test
