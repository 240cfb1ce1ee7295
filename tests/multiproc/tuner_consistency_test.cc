// The tuner across ranks: every rank of a communicator makes the same choice whatever its own
// host constants say, since rank 0's travel in the init's allgather. Here each rank is a process
// with a tuner file of its own (BRAID_TUNER_FILE, read only where the process resolves its
// constants), and the choice they would make on their own differs. A separate program: the
// constants are resolved once per process, so no communicator may exist before the ranks fork.
// Also braidCommLastAlgorithm, which reports the choice.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace braid::test {
namespace {

// Rank 0's latency is so high that the one-step Direct wins at 64 KiB; the others' is so low
// that the bandwidth-optimal Ring would.
std::string tunerFileFor(const std::string& dir, int rank) {
  std::string path = dir + "/rank" + std::to_string(rank) + ".txt";
  std::ofstream(path) << (rank == 0 ? "shm alpha_us=1000\nlocal alpha_us=1000\n"
                                    : "shm alpha_us=0.001\nlocal alpha_us=0.001\n");
  return path;
}

TEST(TunerConsistency, RanksWithDifferentConstantsChooseAlike) {
  char dirTemplate[] = "/tmp/braid-tuner-consistency-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string dir = dirTemplate;
  RunOptions options;
  options.env = {{"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "20"}};
  options.timeoutS = 60;
  RunReport report = runProcesses(
      3,
      [&dir](RankContext& ctx) {
        setenv("BRAID_TUNER_FILE", tunerFileFor(dir, ctx.rank()).c_str(), 1);
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        // 16381 floats (a prime count, 64 KiB less 12 B), small integers: the sum is exact.
        const size_t count = 16381;
        std::vector<float> in(count), out(count, -12345.0f);
        for (size_t i = 0; i < count; i++) in[i] = static_cast<float>(ctx.rank() * 1000 + i % 97);
        ASSERT_EQ(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr),
                  ncclSuccess)
            << ncclGetLastError(comm);
        for (size_t i = 0; i < count; i++) {
          const double want = 3000.0 + 3.0 * static_cast<double>(i % 97);  // ranks 0, 1, 2
          if (out[i] != want) {
            ctx.fail("element " + std::to_string(i) + ": " + std::to_string(out[i]) +
                     " != " + std::to_string(want));
            break;
          }
        }
        char name[32] = "unset";
        EXPECT_EQ(braidCommLastAlgorithm(comm, name, sizeof(name)), ncclSuccess);
        ctx.report("algorithm", name);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  EXPECT_EQ(report.valuesOf("algorithm"), (std::vector<std::string>{"Direct", "Direct", "Direct"}));
}

// The low-latency mailbox is chosen for every allreduce that fits one entry (4064 bytes) when all
// peers share memory, and never for a larger one or over TCP; results stay exact either way.
void runSizesAndReportAlgorithms(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  for (size_t count : {size_t(2), size_t(1016), size_t(1017)}) {  // floats: 8, 4064, 4068 bytes
    std::vector<float> in(count), out(count, -1.0f);
    for (size_t i = 0; i < count; i++) in[i] = static_cast<float>(ctx.rank() + 1 + i % 13);
    ASSERT_EQ(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr),
              ncclSuccess)
        << ncclGetLastError(comm);
    for (size_t i = 0; i < count; i++) {
      const double want = 6.0 + 3.0 * static_cast<double>(i % 13);  // ranks 0, 1, 2
      if (out[i] != want) {
        ctx.fail("count " + std::to_string(count) + " element " + std::to_string(i) + ": " +
                 std::to_string(out[i]) + " != " + std::to_string(want));
        break;
      }
    }
    char name[32] = "unset";
    EXPECT_EQ(braidCommLastAlgorithm(comm, name, sizeof(name)), ncclSuccess);
    ctx.report("algorithm" + std::to_string(count), name);
  }
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(TunerLowLatency, ChosenUpToOneMailboxOnSharedMemoryProcesses) {
  RunOptions options;
  options.env = {{"BRAID_TRANSPORTS", "shm"}, {"BRAID_TIMEOUT_S", "20"}};
  RunReport report = runProcesses(3, runSizesAndReportAlgorithms, options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  for (const char* key : {"algorithm2", "algorithm1016"})
    EXPECT_EQ(report.valuesOf(key), std::vector<std::string>(3, "LowLatency")) << key;
  for (const std::string& name : report.valuesOf("algorithm1017")) EXPECT_NE(name, "LowLatency");
}

TEST(TunerLowLatency, NeverChosenOverTcpProcesses) {
  RunOptions options;
  options.env = {
      {"BRAID_TRANSPORTS", "tcp"}, {"NCCL_SOCKET_IFNAME", "lo"}, {"BRAID_TIMEOUT_S", "20"}};
  RunReport report = runProcesses(3, runSizesAndReportAlgorithms, options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  for (const char* key : {"algorithm2", "algorithm1016", "algorithm1017"})
    for (const std::string& name : report.valuesOf(key)) EXPECT_NE(name, "LowLatency") << key;
}

// braidCommLastAlgorithm: the name the last collective ran with, truncated to the buffer; bad
// arguments are named.
TEST(TunerLastAlgorithm, NamesTheAlgorithmAndRefusesBadArguments) {
  RunOptions options;
  options.env = {{"NCCL_ALGO", "allreduce:tree"}, {"BRAID_TIMEOUT_S", "20"}};
  RunReport report = runThreads(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        char name[32] = "poison";
        EXPECT_EQ(braidCommLastAlgorithm(comm, name, sizeof(name)), ncclSuccess);
        EXPECT_STREQ(name, "");  // no collective yet
        std::vector<int32_t> in(1009, ctx.rank() + 1), out(1009, -1);
        ASSERT_EQ(
            ncclAllReduce(in.data(), out.data(), in.size(), ncclInt32, ncclSum, comm, nullptr),
            ncclSuccess);
        for (size_t i = 0; i < out.size(); i++)
          if (out[i] != 3) {
            ctx.fail("element " + std::to_string(i) + ": " + std::to_string(out[i]));
            break;
          }
        EXPECT_EQ(braidCommLastAlgorithm(comm, name, sizeof(name)), ncclSuccess);
        EXPECT_STREQ(name, "Tree");
        EXPECT_EQ(braidCommLastAlgorithm(comm, name, 3), ncclSuccess);
        EXPECT_STREQ(name, "Tr");
        EXPECT_EQ(braidCommLastAlgorithm(comm, nullptr, 8), ncclInvalidArgument);
        EXPECT_NE(std::string(ncclGetLastError(comm)).find("name is NULL"), std::string::npos);
        EXPECT_EQ(braidCommLastAlgorithm(comm, name, 0), ncclInvalidArgument);
        EXPECT_NE(std::string(ncclGetLastError(comm)).find("nameBytes=0"), std::string::npos);
        EXPECT_NE(braidCommLastAlgorithm(nullptr, name, sizeof(name)), ncclSuccess);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::test
