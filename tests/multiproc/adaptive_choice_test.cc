// The tuner's online choice (src/tuner/adaptive.h): with a core per rank on shared
// memory, an allreduce size whose near candidates are several takes turns with each of them at
// the start of every epoch, then runs the one the ranks measured fastest. Every rank must run
// the same algorithm at every call (a disagreement would fail the call with a mismatch error)
// and every result must stay exact. Its own program: a process resolves the tuner's constants
// once, and these tests pin them to the built-in ones (BRAID_TUNER_CALIBRATE=0), whose model
// has four candidates within 2.5x at 64 KiB on 2 ranks.
#include <gtest/gtest.h>
#include <sched.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace braid::test {
namespace {

constexpr size_t kCount = 16381;  // floats: a prime count, 64 KiB less 12 bytes
constexpr int kCalls = 300;

int allowedCpus() {
  cpu_set_t set;
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

// Runs kCalls allreduces, each checked element by element against the exact sum of small
// integers (poisoned output before each), and reports the algorithm of every call.
void runAndReportAlgorithms(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  std::vector<float> in(kCount), out(kCount);
  std::string sequence;
  std::set<std::string> seen;
  for (int call = 0; call < kCalls; call++) {
    for (size_t i = 0; i < kCount; i++)
      in[i] = static_cast<float>((ctx.rank() + 1) * 3 + (i + static_cast<size_t>(call)) % 29);
    std::fill(out.begin(), out.end(), std::nanf(""));
    ASSERT_EQ(ncclAllReduce(in.data(), out.data(), kCount, ncclFloat, ncclSum, comm, nullptr),
              ncclSuccess)
        << "call " << call << ": " << ncclGetLastError(comm);
    for (size_t i = 0; i < kCount; i++) {
      double want = 0;
      for (int r = 0; r < ctx.nranks(); r++)
        want += (r + 1) * 3 + static_cast<double>((i + static_cast<size_t>(call)) % 29);
      if (out[i] != want) {
        ctx.fail("call " + std::to_string(call) + " element " + std::to_string(i) + ": " +
                 std::to_string(out[i]) + " != " + std::to_string(want));
        return;
      }
    }
    char name[32] = "unset";
    ASSERT_EQ(braidCommLastAlgorithm(comm, name, sizeof(name)), ncclSuccess);
    sequence += std::string(name) + ",";
    seen.insert(name);
  }
  ctx.report("sequence", sequence);
  ctx.report("distinct", std::to_string(seen.size()));
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

RunOptions optionsWith(const char* adapt, const char* algo = nullptr) {
  RunOptions options;
  options.env = {{"BRAID_TUNER_CALIBRATE", "0"},
                 {"BRAID_TUNER_ADAPT", adapt},
                 {"BRAID_TRANSPORTS", "shm,local"},
                 {"BRAID_TIMEOUT_S", "20"}};
  if (algo) options.env.push_back({"NCCL_ALGO", algo});
  options.timeoutS = 90;
  return options;
}

void expectSameSequenceWithTurns(const RunReport& report) {
  const std::vector<std::string> sequences = report.valuesOf("sequence");
  ASSERT_EQ(sequences.size(), 2u);
  EXPECT_FALSE(sequences[0].empty());
  EXPECT_EQ(sequences[0], sequences[1]) << "the ranks ran different algorithms";
  // Epochs of 100 calls: every candidate takes turns in each, so more than one ran.
  EXPECT_GE(std::stoi(report.valuesOf("distinct")[0]), 2) << sequences[0];
}

class AdaptiveChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    // With more ranks than cores the choice does not adapt (a call's time is the scheduler's).
    if (allowedCpus() < 2) GTEST_SKIP() << "needs 2 CPUs: adaptation runs with a core per rank";
  }
};

TEST_F(AdaptiveChoice, RanksTakeTheSameTurnsAndResultsStayExactThreads) {
  RunReport report = runThreads(2, runAndReportAlgorithms, optionsWith("100"));
  BRAID_EXPECT_ALL_RANKS_OK(report);
  expectSameSequenceWithTurns(report);
}

TEST_F(AdaptiveChoice, RanksTakeTheSameTurnsAndResultsStayExactProcesses) {
  RunReport report = runProcesses(2, runAndReportAlgorithms, optionsWith("100"));
  BRAID_EXPECT_ALL_RANKS_OK(report);
  expectSameSequenceWithTurns(report);
}

TEST_F(AdaptiveChoice, OffOrOneAlgorithmAllowedRunsOneAlgorithm) {
  for (const auto& [adapt, algo] :
       std::vector<std::pair<const char*, const char*>>{{"0", nullptr}, {"100", "Ring"}}) {
    RunReport report = runProcesses(2, runAndReportAlgorithms, optionsWith(adapt, algo));
    BRAID_EXPECT_ALL_RANKS_OK(report);
    EXPECT_EQ(report.valuesOf("distinct"), (std::vector<std::string>{"1", "1"}))
        << "BRAID_TUNER_ADAPT=" << adapt << " NCCL_ALGO=" << (algo ? algo : "");
  }
}

}  // namespace
}  // namespace braid::test
