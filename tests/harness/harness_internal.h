// Pieces the three rank shapes share: running one rank's body with its failures captured,
// temporary environment changes, the child-to-parent result encoding, and waiting for child
// processes under a hard deadline.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "harness/rank_harness.h"

namespace braid::test::internal {

/// Runs `fn` as `ctx.rank()` and turns what happened (return, failures recorded on the context
/// or through GoogleTest assertions on this thread, exceptions) into a result.
RankResult runRankBody(RankContext& ctx, const RankFn& fn);

/// Captures GoogleTest assertion failures per rank (by the rank running on the failing thread)
/// while it exists. Create it before starting rank threads and destroy it after joining them.
class FailureCapture {
 public:
  FailureCapture();
  ~FailureCapture();
  FailureCapture(const FailureCapture&) = delete;
  FailureCapture& operator=(const FailureCapture&) = delete;

 private:
  void* listener_;
};

/// Sets variables for its lifetime and restores the previous values (or absence) afterwards.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::vector<std::pair<std::string, std::string>>& vars);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> saved_;
};

/// One line-oriented message with a rank's whole result; `decodeResult` reads it back and says
/// whether it was complete (a child that dies mid-way leaves an incomplete one).
std::string encodeResult(const RankResult& result);
bool decodeResult(const std::string& text, RankResult* result);

/// Writes all of `text` to `fd` (retrying short writes); false on error.
bool writeAll(int fd, const std::string& text);

/// A child process that will send its result through `readFd`.
struct ChildProcess {
  int rank = -1;
  pid_t pid = -1;
  int readFd = -1;
  std::string where;
  std::string logPath;  ///< file with its stdout/stderr ("" when inherited)
};

/// Collects every child's result until all have exited or `timeoutS` has passed; children still
/// running at the deadline are killed (SIGKILL) and reported as timed out. Closes the fds and
/// removes the log files.
std::vector<RankResult> waitForChildren(std::vector<ChildProcess>& children, double timeoutS);

/// In a child: be killed when the test process dies (also across exec), so a test killed by
/// its timeout leaves no rank running.
void dieWithParent(pid_t parent);

/// In a child process: runs the rank, sends the result through `fd` and never returns.
[[noreturn]] void runChildRank(RankContext& ctx, const RankFn& fn, int fd);

/// Seconds since an arbitrary fixed point (monotonic).
double nowSeconds();

}  // namespace braid::test::internal
