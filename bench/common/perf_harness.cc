#include "perf_harness.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "braid/braid.h"
#include "datatypes.h"
#include "fatal.h"

// Weak: the programs may link against another NCCL-API library (BRAID_PERF_LINK_LIBRARY), which
// has no braidCommLastAlgorithm; -A then reports "?".
#pragma weak braidCommLastAlgorithm
namespace braid::bench {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// nccl-tests' size progression (guarded so that -b 0 still advances).
std::size_t nextSize(const PerfOptions& o, std::size_t size) {
  if (o.stepFactor > 1) return size ? size * o.stepFactor : 1;
  return size + o.stepBytes;
}

// The state of one (type, op, root) test on one thread.
class TestCase {
 public:
  TestCase(PerfRun& run, ThreadState& state, int typeIndex, int opIndex, int root)
      : run_(run), o_(run.options), state_(state), type_(kTypes[typeIndex]), opIndex_(opIndex) {
    call_.type = type_.type;
    call_.opIndex = opIndex;
    call_.root = root;
    call_.nranks = run.nranks;
    int ncomms = static_cast<int>(state.comms.size());
    ops_.resize(ncomms, static_cast<ncclRedOp_t>(opIndex < ncclNumOps ? opIndex : 0));
    // nccl-tests misaligns by -u elements of the type under test.
    for (int i = 0; i < ncomms; ++i) {
      send_.push_back(state.sendBases[i] + o_.unalign * type_.size);
      recv_.push_back(state.recvBases[i] + o_.unalign * type_.size);
      if (opIndex == kOpMulSum) {
        // One premul-sum op per rank, kept for the whole test so that no pending call can
        // outlive it.
        unsigned char scalar[8];
        encodePremulScalar(type_.type, rank(i), scalar);
        PERF_NCCL_CHECK(ncclRedOpCreatePreMulSum(&ops_[i], scalar, type_.type,
                                                 ncclScalarHostImmediate, state.comms[i]),
                        rank(i), state.comms[i]);
      }
    }
  }

  ~TestCase() {
    if (opIndex_ != kOpMulSum) return;
    for (std::size_t i = 0; i < ops_.size(); ++i) {
      PERF_NCCL_CHECK(ncclRedOpDestroy(ops_[i], state_.comms[i]), rank(static_cast<int>(i)),
                      state_.comms[i]);
    }
  }

  void run(const char* opName) {
    run_.group.barrier(state_.view());
    run_.watchdog.arm(state_.thread, "warm-up");
    for (std::size_t size = o_.minBytes; size <= run_.maxBytes; size = size ? size * 2 : 1) {
      setSize(size);
      for (int iter = 0; iter < o_.warmupIters; ++iter) startColl(false, iter);
    }
    run_.watchdog.disarm(state_.thread);
    long repeat = o_.runCycles;
    do {
      for (std::size_t size = o_.minBytes; size <= run_.maxBytes; size = nextSize(o_, size)) {
        setSize(size);
        if (state_.isMain(run_)) {
          run_.report.writeLinePreamble(std::max(sendBytes_, recvBytes_), call_.count,
                                        type_.testsName, opName, call_.root);
        }
        benchTime(false);
        benchTime(true);
        if (state_.isMain(run_)) run_.report.writeLineEnd(o_.iters, algorithm_);
      }
    } while (--repeat != 0);
  }

 private:
  int rank(int i) const { return state_.firstRank + i; }

  // The algorithm this thread's first communicator's last collective ran with (-A).
  void lastAlgorithm() {
    if (!braidCommLastAlgorithm ||
        braidCommLastAlgorithm(state_.comms[0], algorithm_, sizeof(algorithm_)) != ncclSuccess)
      snprintf(algorithm_, sizeof(algorithm_), "?");
  }

  void setSize(std::size_t size) {
    std::size_t paramCount = 0;
    run_.test.getCollByteCount(&call_.sendCount, &call_.recvCount, &paramCount,
                               &call_.sendInplaceOffset, &call_.recvInplaceOffset,
                               size / type_.size, type_.size, run_.nranks);
    call_.count = paramCount;
    sendBytes_ = call_.sendCount * type_.size;
    recvBytes_ = call_.recvCount * type_.size;
  }

  // One collective on every rank of the thread (one group when it drives several).
  void startColl(bool inPlace, int iter) {
    // Move the buffers between iterations, as nccl-tests does, to avoid cache effects.
    std::size_t total = std::max(sendBytes_, recvBytes_);
    std::size_t steps = total ? run_.maxBytes / total : 1;
    std::size_t shift = total * (static_cast<std::size_t>(iter) % std::max<std::size_t>(steps, 1));
    int ncomms = static_cast<int>(state_.comms.size());
    if (ncomms > 1) PERF_NCCL_CHECK(ncclGroupStart(), rank(0), nullptr);
    for (int i = 0; i < ncomms; ++i) {
      char* recv = recv_[i] + shift;
      char* send = send_[i] + shift;
      std::size_t r = static_cast<std::size_t>(rank(i));
      PERF_NCCL_CHECK(
          run_.test.runColl(inPlace ? recv : send,
                            inPlace ? call_.sendInplaceOffset * type_.size * r : 0, recv,
                            inPlace ? call_.recvInplaceOffset * type_.size * r : 0, call_.count,
                            type_.type, ops_[i], call_.root, state_.comms[i], nullptr),
          rank(i), state_.comms[i]);
    }
    if (ncomms > 1) PERF_NCCL_CHECK(ncclGroupEnd(), rank(0), nullptr);
    if (o_.blocking == 1) run_.group.barrier(state_.view());
  }

  void initData(bool inPlace) {
    for (std::size_t i = 0; i < state_.comms.size(); ++i) {
      run_.test.initData(call_, rank(static_cast<int>(i)), send_[i], recv_[i], inPlace);
    }
  }

  // Times iters x aggIters calls; returns seconds per call, and per outer iteration in perIter.
  double timeIterations(bool inPlace, std::vector<double>* perIter) {
    double collectiveOnly = 0;
    // The clock is read per iteration only where per-iteration times are asked for: two reads
    // cost about a tenth of an 8-byte call here, which a latency figure must not include.
    const bool timeEach = perIter != nullptr || o_.blocking == 3;
    Clock::time_point start = Clock::now();
    for (int iter = 0; iter < o_.iters; ++iter) {
      Clock::time_point iterStart = timeEach ? Clock::now() : start;
      if (o_.aggIters > 1) PERF_NCCL_CHECK(ncclGroupStart(), rank(0), nullptr);
      for (int a = 0; a < o_.aggIters; ++a) startColl(inPlace, iter * o_.aggIters + a);
      if (o_.aggIters > 1) PERF_NCCL_CHECK(ncclGroupEnd(), rank(0), nullptr);
      double iterSeconds = timeEach ? secondsSince(iterStart) : 0;
      if (perIter) (*perIter)[iter] = iterSeconds / o_.aggIters;
      if (o_.blocking == 3) {
        collectiveOnly += iterSeconds;  // the barrier below is not part of the time
        run_.group.barrier(state_.view());
      }
    }
    double elapsed = o_.blocking == 3 ? collectiveOnly : secondsSince(start);
    return elapsed / (static_cast<double>(o_.iters) * o_.aggIters);
  }

  void benchTime(bool inPlace) {
    if (inPlace && run_.test.inPlace == InPlaceMode::kNotRun) {
      // Every rank skips alike, so no barrier or allreduce is left unmatched.
      if (state_.isMain(run_)) run_.report.writeLineNotRun(!inPlace);
      return;
    }
    bool checked = !(inPlace && run_.test.inPlace == InPlaceMode::kUnchecked);
    int checks = checked ? o_.check : 0;
    ThreadComms self = state_.view();
    run_.watchdog.arm(state_.thread, inPlace ? "in-place run" : "out-of-place run");
    if (o_.check) initData(inPlace);
    startColl(inPlace, 0);  // synchronise before timing
    run_.group.barrier(self);

    std::vector<double> perIter(o_.perIterTiming ? o_.iters : 0);
    double seconds = timeIterations(inPlace, o_.perIterTiming ? &perIter : nullptr);
    // Before the harness's own allreduces (barrier, time average) replace it.
    if (o_.reportAlgorithm) lastAlgorithm();
    double cpuSeconds = seconds;  // host calls complete before returning: CPU time is the time
    run_.group.allreduce(self, &seconds, 1, static_cast<Combine>(o_.average));
    double algBw = 0, busBw = 0;
    run_.test.getBw(call_.count, type_.size, seconds, &algBw, &busBw, run_.nranks);
    run_.group.barrier(self);

    std::int64_t wrong = 0;
    for (int c = 0; c < checks; ++c) {
      call_.seed = static_cast<std::uint64_t>(++checkRuns_);
      initData(inPlace);
      startColl(inPlace, 0);
      std::int64_t local = 0;
      for (std::size_t i = 0; i < state_.comms.size(); ++i) {
        local += run_.test.check(call_, rank(static_cast<int>(i)), recv_[i], inPlace);
      }
      if (local) ++state_.errors;
      wrong = local;
      run_.group.allreduce(self, &wrong, 1, Combine::kSum);
      if (wrong) break;
    }
    run_.watchdog.disarm(state_.thread);

    if (state_.isMain(run_)) {
      double usec = (o_.reportCpuTime ? cpuSeconds : seconds) * 1e6;
      run_.report.writeLineBody(usec, algBw, busBw, checks > 0, wrong, !inPlace);
    }
    if (o_.perIterTiming) reportPerIteration(perIter, inPlace);
    state_.busBwSum += busBw;
    state_.busBwCount++;
  }

  // -I: each iteration's time is its maximum over all ranks; processes keep their own rows.
  void reportPerIteration(const std::vector<double>& perIter, bool inPlace) {
    int nProcs = run_.launch.nProcs;
    std::size_t iters = perIter.size();
    // A max over rows that are zero except in their own process's row gathers the rows.
    std::vector<double> rows(iters * nProcs, 0.0);
    std::copy(perIter.begin(), perIter.end(), rows.begin() + iters * run_.launch.proc);
    run_.group.allreduce(state_.view(), rows.data(), rows.size(), Combine::kMax);
    if (!state_.isMain(run_)) return;
    std::vector<double> worst(iters, 0.0);
    for (int p = 0; p < nProcs; ++p) {
      for (std::size_t i = 0; i < iters; ++i) worst[i] = std::max(worst[i], rows[p * iters + i]);
    }
    int skip = o_.perIterSkip;
    IterationStats stats =
        computeIterationStats(worst.data() + skip, static_cast<int>(iters) - skip);
    run_.report.writePerIteration(stats, worst, rows, nProcs, !inPlace);
  }

  PerfRun& run_;
  const PerfOptions& o_;
  ThreadState& state_;
  const TypeInfo& type_;
  int opIndex_;
  CollCall call_;
  std::size_t sendBytes_ = 0;
  char algorithm_[32] = "?";
  std::size_t recvBytes_ = 0;
  std::vector<char*> send_;
  std::vector<char*> recv_;
  std::vector<ncclRedOp_t> ops_;
  int checkRuns_ = 0;
};

}  // namespace

void runThreadTests(PerfRun& run, ThreadState& state) {
  const PerfOptions& o = run.options;
  if (run.test.unsupportedRanks) {
    if (const char* why = run.test.unsupportedRanks(run.nranks)) {
      if (state.isMain(run)) run.report.writeNote(why);
      return;
    }
  }
  std::vector<int> types;
  if (o.typeIndex >= 0) {
    types.push_back(o.typeIndex);
  } else {
    for (int t = 0; t < kNumTypes; ++t) types.push_back(t);
  }
  std::vector<int> ops;
  if (!run.test.usesOp) {
    ops.push_back(-1);
  } else if (o.opIndex >= 0) {
    ops.push_back(o.opIndex);
  } else {
    for (int op = 0; op < kNumOps; ++op) ops.push_back(op);
  }
  std::vector<int> roots;
  if (!run.test.usesRoot) {
    roots.push_back(-1);
  } else if (o.root >= 0) {
    roots.push_back(o.root);
  } else {
    for (int r = 0; r < run.nranks; ++r) roots.push_back(r);
  }
  for (int type : types) {
    for (int op : ops) {
      for (int root : roots) {
        TestCase test(run, state, type, op < 0 ? 0 : op, root);
        test.run(op < 0 ? "none" : kOpNames[op]);
      }
    }
  }
}

}  // namespace braid::bench
