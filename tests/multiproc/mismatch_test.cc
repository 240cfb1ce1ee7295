// Ranks that disagree (label multiproc): calls whose count, datatype or op differ between ranks,
// and a rank that aborts or never calls while the others wait. Braid must answer with an error
// within BRAID_TIMEOUT_S, never with a silently wrong result or a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"

namespace braid::test {
namespace {

constexpr double kTimeoutS = 5;
constexpr double kSlackS = 2.5;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

RunOptions options(const char* transport, const char* algo) {
  RunOptions o;
  o.env = {{"NCCL_SOCKET_IFNAME", "lo"},
           {"BRAID_TIMEOUT_S", "5"},
           {"BRAID_TRANSPORTS", transport},
           {"NCCL_ALGO", algo},
           {"BRAID_SLOT_BYTES", "4096"}};
  o.timeoutS = 60;
  return o;
}

struct Disagreement {
  const char* name;
  size_t count[2];  // rank 0, others
  ncclDataType_t dtype[2];
  ncclRedOp_t op[2];
};

void PrintTo(const Disagreement& d, std::ostream* os) {
  *os << d.name;
}

class Mismatch : public ::testing::TestWithParam<std::tuple<Disagreement, const char*>> {};

// Every rank must fail (or, at the very least, none may succeed with a result it cannot have),
// and within the timeout.
TEST_P(Mismatch, EveryRankGetsAnError) {
  const Disagreement d = std::get<0>(GetParam());
  const char* algo = std::get<1>(GetParam());
  RunReport report = runProcesses(
      3,
      [d](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        const int side = ctx.rank() == 0 ? 0 : 1;
        std::vector<double> buf(std::max(d.count[0], d.count[1]), 1.0);
        double start = now();
        ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), d.count[side], d.dtype[side],
                                       d.op[side], comm, nullptr);
        ctx.report("seconds", std::to_string(now() - start));
        if (r == ncclSuccess) {
          ctx.fail("the mismatched allreduce succeeded");
        } else {
          ctx.report("error", ncclGetLastError(comm));
        }
        ncclCommAbort(comm);
      },
      options("shm", algo));
  BRAID_EXPECT_ALL_RANKS_OK(report);
  for (const std::string& s : report.valuesOf("seconds")) {
    ASSERT_FALSE(s.empty()) << report.describe();
    EXPECT_LE(std::stod(s), kTimeoutS + kSlackS) << report.describe();
  }
}

const Disagreement kDisagreements[] = {
    {"Count", {4096, 8192}, {ncclFloat32, ncclFloat32}, {ncclSum, ncclSum}},
    {"SmallCount", {3, 5}, {ncclFloat32, ncclFloat32}, {ncclSum, ncclSum}},
    {"DataType", {1000, 1000}, {ncclFloat32, ncclInt32}, {ncclSum, ncclSum}},
    {"Op", {1000, 1000}, {ncclFloat32, ncclFloat32}, {ncclSum, ncclMax}},
};

INSTANTIATE_TEST_SUITE_P(Disagreements, Mismatch,
                         ::testing::Combine(::testing::ValuesIn(kDisagreements),
                                            ::testing::Values("Ring", "Tree")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_" +
                                  std::get<1>(info.param);
                         });

// Rank 0 is alive but never joins the allreduce (it aborts its communicator and waits): the
// others must time out, not wait forever.
TEST(Absent, ARankThatAbortsLeavesTheOthersWithATimeout) {
  RunReport report = runProcesses(
      3,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        if (ctx.rank() == 0) {
          ncclCommAbort(comm);
          std::this_thread::sleep_for(std::chrono::duration<double>(kTimeoutS + kSlackS + 1));
          return;
        }
        std::vector<float> buf(100000, 1.0f);
        double start = now();
        ncclResult_t r =
            ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
        double seconds = now() - start;
        if (r == ncclSuccess) ctx.fail("allreduce without rank 0 succeeded");
        if (seconds > kTimeoutS + kSlackS) ctx.fail("waited " + std::to_string(seconds) + " s");
        ctx.report("error", ncclGetLastError(comm));
        ncclCommAbort(comm);
      },
      options("shm", "Ring"));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::test
