// Ranks that disagree about an operation (label fault): the last rank calls with another count,
// datatype, op, root or collective than the others. Every rank must get an error, well before the
// deadline (detection, not a timeout): none may succeed with a result it cannot have, none may
// hang, and some rank must name the mismatch. (tests/multiproc/mismatch_diagnosis_test.cc
// asserts the exact wording.)
#include <functional>

#include "fault/fault_run.h"

namespace braid::fault {
namespace {

using test::RankContext;

constexpr double kMismatchTimeoutS = 4;
// Mismatches are detected (a slot's fingerprint, or a stalled rank reading its peers' published
// calls about every 20 ms), not timed out: every error must come within half the deadline.
constexpr double kMismatchDetectS = kMismatchTimeoutS / 2;
constexpr size_t kCount = 4099;

struct Disagreement {
  const char* name;
  /// The call of `rank` (the odd one out is the last rank) on buffers of 2 * kCount elements.
  std::function<ncclResult_t(int rank, int nranks, ncclComm_t comm, void* send, void* recv)> call;
  /// The call may succeed on ranks whose result is right in their own view (a broadcast from the
  /// root they named, fed by ranks that agree with them); the next call must fail there. The
  /// ranks that disagree must fail in the call itself.
  bool surfacesLater = false;
};

bool oddOne(int rank, int nranks) {
  return rank == nranks - 1;
}

std::vector<Disagreement> disagreements() {
  return {
      {"count",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         return ncclAllReduce(s, r, oddOne(rank, n) ? 2 * kCount : kCount, ncclInt32, ncclSum, c,
                              nullptr);
       }},
      {"datatype",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         return ncclAllReduce(s, r, kCount, oddOne(rank, n) ? ncclFloat32 : ncclInt32, ncclSum, c,
                              nullptr);
       }},
      // Small enough for the low-latency mailbox on shared memory: a count that differs there,
      // and one rank with a message too large for it while the others use it.
      {"small_count",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         return ncclAllReduce(s, r, oddOne(rank, n) ? 14 : 7, ncclInt32, ncclSum, c, nullptr);
       }},
      {"small_vs_large_count",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         return ncclAllReduce(s, r, oddOne(rank, n) ? kCount : 7, ncclInt32, ncclSum, c, nullptr);
       }},
      {"op",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         return ncclAllReduce(s, r, kCount, ncclInt32, oddOne(rank, n) ? ncclMax : ncclSum, c,
                              nullptr);
       }},
      {"root",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         return ncclBroadcast(s, r, kCount, ncclInt32, oddOne(rank, n) ? n - 1 : 0, c, nullptr);
       },
       true},
      {"collective",
       [](int rank, int n, ncclComm_t c, void* s, void* r) {
         if (oddOne(rank, n)) return ncclBroadcast(s, r, kCount, ncclInt32, 0, c, nullptr);
         return ncclAllReduce(s, r, kCount, ncclInt32, ncclSum, c, nullptr);
       }},
  };
}

struct MismatchCase {
  Wire wire;
  size_t which;
};

class Mismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(Mismatch, EveryRankGetsAnErrorInTime) {
  const MismatchCase m = GetParam();
  BRAID_FAULT_SKIP_UNLESS_AVAILABLE(m.wire);
  const Disagreement d = disagreements()[m.which];
  auto before = braidShmEntries();
  FaultOptions options;
  options.timeoutS = kMismatchTimeoutS;
  test::RunReport report = runFaultRanks(
      m.wire, 4,
      [d](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        // One agreed operation first: the connections are up, the disagreement comes later.
        if (checkedAllReduce(ctx, comm, kCount, 1) != ncclSuccess) {
          ctx.fail(std::string("the agreed allreduce failed: ") + ncclGetLastError(comm));
          ncclCommAbort(comm);
          return;
        }
        std::vector<int32_t> send(2 * kCount, 1), recv(2 * kCount, 0);
        double start = now();
        ncclResult_t r = d.call(ctx.rank(), ctx.nranks(), comm, send.data(), recv.data());
        if (r != ncclSuccess) {
          reportFailure(ctx, d.name, r, now() - start, ncclGetLastError(comm));
        } else if (!d.surfacesLater || ctx.rank() == 0 || oddOne(ctx.rank(), ctx.nranks())) {
          // Both self-declared roots (0 in the view of most, the last rank in its own) must fail
          // in the broadcast: each would otherwise return data the others do not have.
          ctx.fail(std::string("the mismatched ") + d.name + " call succeeded on rank " +
                   std::to_string(ctx.rank()));
        } else {
          start = now();
          r = checkedAllReduce(ctx, comm, kCount, 2);
          if (r == ncclSuccess)
            ctx.fail(std::string("the mismatched ") + d.name +
                     " call and the next allreduce "
                     "both succeeded on rank " +
                     std::to_string(ctx.rank()));
          else
            reportFailure(ctx, std::string("next call"), r, now() - start, ncclGetLastError(comm));
        }
        ncclCommAbort(comm);
      },
      options);
  if (isRankChild()) return;
  Verdict v;
  v.ranks.assign(4, Expect::kError);
  v.maxErrorS = kMismatchDetectS;
  v.someErrorMentions = "operation mismatch";
  judge(std::string("mismatched ") + d.name, m.wire, report, leftoverShm(before), v,
        "last rank differs");
}

std::vector<MismatchCase> cases() {
  std::vector<MismatchCase> out;
  for (Wire wire : {Wire::kShm, Wire::kTcp})
    for (size_t i = 0; i < disagreements().size(); i++) out.push_back({wire, i});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fault, Mismatch, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<MismatchCase>& info) {
                           return std::string(wireTag(info.param.wire)) + "_" +
                                  disagreements()[info.param.which].name;
                         });

}  // namespace
}  // namespace braid::fault
