// The per-host tuner cache holds a measurement of the host, not of its neighbours: a calibration
// made while every core is busy serves its process but is not written, so the next process on
// the host measures again; one made on free cores is written. A separate program: a process
// resolves its constants once, at its first communicator, so the ranks must fork before any
// exists.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
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

// Two ranks initialise a communicator with the cache at `cache` (rank 0 calibrates), with
// twice as many spinning threads as cores in each rank when `busy`: then no core is free while
// rank 0 calibrates.
void calibrate(const std::string& cache, bool busy) {
  RunOptions options;
  options.env = {{"BRAID_TUNER_CACHE", cache}, {"BRAID_TUNER_CALIBRATE", "1"}};
  options.timeoutS = 60;
  RunReport report = runProcesses(
      2,
      [busy](RankContext& ctx) {
        unsetenv("BRAID_TUNER_FILE");
        std::atomic<bool> stop{false};
        std::vector<std::thread> spinning;
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned i = 0; busy && i < 2 * cores; i++)
          spinning.emplace_back([&stop] {
            while (!stop.load(std::memory_order_relaxed)) {
            }
          });
        initAndAllReduce(ctx);
        stop.store(true);
        for (std::thread& t : spinning) t.join();
      },
      options);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

struct TempDir {
  TempDir() { EXPECT_NE(mkdtemp(path), nullptr); }
  ~TempDir() {
    unlink(file().c_str());
    rmdir(path);
  }
  std::string file() const { return std::string(path) + "/tuner.txt"; }
  char path[32] = "/tmp/braid-tuner-cache-XXXXXX";
};

TEST(TunerCache, ACalibrationWithEveryCoreBusyIsNotCached) {
  TempDir dir;
  calibrate(dir.file(), true);
  EXPECT_NE(access(dir.file().c_str(), F_OK), 0)
      << dir.file() << " was written from a loaded calibration";
}

// The other half of the rule, so that the test above cannot pass because nothing is ever
// cached: a calibration on free cores is written, one row of figures per link class. Other
// work on the machine can take every core for a moment (and then, rightly, nothing is written):
// a few tries, of which one must write the file.
TEST(TunerCache, ACalibrationOnFreeCoresIsCached) {
  TempDir dir;
  for (int attempt = 0; attempt < 3 && access(dir.file().c_str(), F_OK) != 0; attempt++)
    calibrate(dir.file(), false);
  std::ifstream in(dir.file());
  ASSERT_TRUE(in) << "no calibration on free cores wrote " << dir.file();
  std::map<std::string, std::map<std::string, double>> rows;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string link, field;
    words >> link;
    while (words >> field) {
      const size_t eq = field.find('=');
      ASSERT_NE(eq, std::string::npos) << line;
      rows[link][field.substr(0, eq)] = std::stod(field.substr(eq + 1));
    }
  }
  for (const char* link : {"local", "shm", "tcp"})
    for (const char* figure : {"alpha_us", "gbps", "reduce_gbps"}) {
      ASSERT_TRUE(rows[link].count(figure)) << link << " " << figure << " missing";
      const double value = rows[link][figure];
      EXPECT_TRUE(std::isfinite(value) && value > 0) << link << " " << figure << "=" << value;
    }
}

}  // namespace
}  // namespace braid::test
