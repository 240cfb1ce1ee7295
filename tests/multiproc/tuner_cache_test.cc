// The per-host tuner cache holds a measurement of the host, not of its neighbours: a calibration
// made while every core is busy serves its process but is not written, so the next process on
// the host measures again. A separate program: a process resolves its constants once, at its
// first communicator, so the ranks must fork before any exists.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "harness/rank_harness.h"

namespace braid::test {
namespace {

// Initialises a communicator (rank 0 calibrates) and runs one exact allreduce.
void initAndAllReduce(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const size_t count = 7;
  std::vector<float> in(count), out(count, -1.0f);
  for (size_t i = 0; i < count; i++) in[i] = static_cast<float>(ctx.rank() + i);
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr),
            ncclSuccess)
      << ncclGetLastError(comm);
  for (size_t i = 0; i < count; i++)
    if (out[i] != static_cast<float>(1 + 2 * i)) ctx.fail("element " + std::to_string(i));
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(TunerCache, ACalibrationWithEveryCoreBusyIsNotCached) {
  char dirTemplate[] = "/tmp/braid-tuner-cache-XXXXXX";
  ASSERT_NE(mkdtemp(dirTemplate), nullptr);
  const std::string cache = std::string(dirTemplate) + "/tuner.txt";
  RunOptions options;
  options.env = {{"BRAID_TUNER_CACHE", cache}, {"BRAID_TUNER_CALIBRATE", "1"}};
  options.timeoutS = 60;
  RunReport report = runProcesses(
      2,
      [](RankContext& ctx) {
        unsetenv("BRAID_TUNER_FILE");
        // Twice as many spinning threads as cores, in each rank: no core is free while rank 0
        // calibrates.
        std::atomic<bool> stop{false};
        std::vector<std::thread> busy;
        for (unsigned i = 0; i < 2 * std::max(1u, std::thread::hardware_concurrency()); i++)
          busy.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
          });
        initAndAllReduce(ctx);
        stop.store(true);
        for (std::thread& t : busy) t.join();
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  EXPECT_NE(access(cache.c_str(), F_OK), 0) << cache << " was written from a loaded calibration";
  unlink(cache.c_str());
  rmdir(dirTemplate);
}

}  // namespace
}  // namespace braid::test
