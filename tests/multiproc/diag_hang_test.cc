// Hang reports (label multiproc): a rank that stops calling leaves the others with a timeout
// whose text names the missing rank and the sequence numbers, a communicator that failed accepts
// only abort, destroy and queries, every rank's flight recorder reaches NCCL_DEBUG_FILE, and
// SIGUSR1 (BRAID_SIGUSR1_DUMP=1) dumps it from a live process. Also the per-communicator timeout
// (braidCommSetTimeout) and its bad arguments.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace braid::test {
namespace {

constexpr double kTimeoutS = 0.5;  // set per communicator; the environment says 60
constexpr double kSlackS = 2.5;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder for the ranks' log files (NCCL_DEBUG_FILE=<dir>/rank.%p.log).
std::string freshLogDir(const char* name) {
  std::string dir = ::testing::TempDir() + "braid_diag_" + name + "_" + std::to_string(getpid());
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  EXPECT_EQ(system(cmd.c_str()), 0);
  return dir;
}

void removeDir(const std::string& dir) {
  std::string cmd = "rm -rf '" + dir + "'";
  EXPECT_EQ(system(cmd.c_str()), 0);
}

std::string logOf(const std::string& dir, const std::string& pid) {
  return readFile(dir + "/rank." + pid + ".log");
}

// Every rank runs two matching allreduces (checked exactly); then rank 0 stops calling while the
// others start #3 with a 2 s timeout (the environment's is 60 s: the override must be what ends
// the wait).
void absentRankBody(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  ctx.report("pid", std::to_string(getpid()));
  for (int i = 0; i < 2; i++) {
    std::vector<int64_t> v(5);
    for (int k = 0; k < 5; k++) v[k] = ctx.rank() + k;
    ASSERT_EQ(ncclAllReduce(v.data(), v.data(), 5, ncclInt64, ncclSum, comm, nullptr), ncclSuccess)
        << ncclGetLastError(comm);
    for (int k = 0; k < 5; k++) EXPECT_EQ(v[k], 3 + 3 * k);
  }
  if (ctx.rank() == 0) {
    // Alive, connected, but never calls #3; leaves once the others have given up.
    std::this_thread::sleep_for(std::chrono::duration<double>(kTimeoutS + 1.5));
    ncclCommAbort(comm);
    return;
  }
  ASSERT_EQ(braidCommSetTimeout(comm, kTimeoutS), ncclSuccess) << ncclGetLastError(comm);
  double timeout = -1;
  ASSERT_EQ(braidCommGetTimeout(comm, &timeout), ncclSuccess);
  EXPECT_EQ(timeout, kTimeoutS);
  std::vector<float> buf(1000, 1.0f);
  double start = now();
  ncclResult_t r =
      ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
  ctx.report("seconds", std::to_string(now() - start));
  ctx.report("result", std::to_string(r));
  ctx.report("error", ncclGetLastError(comm));
  // The communicator failed: only abort, destroy and queries remain.
  ncclResult_t async = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  int count = 0;
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(count, 3);
  ncclResult_t again =
      ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
  EXPECT_EQ(again, ncclRemoteError);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("can only be aborted or destroyed"),
            std::string::npos)
      << ncclGetLastError(comm);
  EXPECT_NE(braidBarrier(comm), ncclSuccess);
  EXPECT_NE(ncclSend(buf.data(), 1, ncclFloat32, 0, comm, nullptr), ncclSuccess);
  EXPECT_NE(braidCommSetTimeout(comm, 5), ncclSuccess);
  // Stay until the other waiting rank has timed out too (leaving would end its wait early with
  // "peer exited" instead of the timeout this test is about).
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
}

RunOptions hangOptions(const char* transports, const std::string& logDir) {
  RunOptions o;
  o.env = {{"NCCL_SOCKET_IFNAME", "lo"},
           {"BRAID_TIMEOUT_S", "60"},
           {"BRAID_TRANSPORTS", transports},
           {"NCCL_ALGO", "Ring"}};
  if (!logDir.empty()) {
    o.env.push_back({"NCCL_DEBUG", "WARN"});
    o.env.push_back({"NCCL_DEBUG_FILE", logDir + "/rank.%p.log"});
  }
  o.timeoutS = 40;
  return o;
}

// The error texts of ranks 1 and 2 (ring 0 -> 1 -> 2 -> 0: rank 1 waits on rank 0 directly).
void expectAbsentRankNamed(const RunReport& report) {
  std::vector<std::string> errors = report.valuesOf("error");
  std::vector<std::string> results = report.valuesOf("result");
  std::vector<std::string> seconds = report.valuesOf("seconds");
  for (int r = 1; r < 3; r++) {
    EXPECT_EQ(results[r], std::to_string(ncclRemoteError)) << errors[r];
    ASSERT_FALSE(seconds[r].empty()) << report.describe();
    EXPECT_GE(std::stod(seconds[r]), kTimeoutS - 0.1) << errors[r];
    EXPECT_LE(std::stod(seconds[r]), kTimeoutS + kSlackS) << errors[r];
    EXPECT_NE(errors[r].find("rank " + std::to_string(r) + " at #3"), std::string::npos)
        << errors[r];
    EXPECT_NE(errors[r].find("timed out after 0.5 s"), std::string::npos) << errors[r];
  }
  EXPECT_NE(errors[1].find("rank 1 at #3 is waiting for data from rank 0 (last heard from at #2;"),
            std::string::npos)
      << errors[1];
  EXPECT_NE(errors[1].find("rank 0 at #2"), std::string::npos) << errors[1];
}

TEST(HangReport, ARankThatNeverCallsIsNamedWithItsSequenceNumberThreads) {
  RunReport report = runThreads(3, absentRankBody, hangOptions("local", ""));
  BRAID_ASSERT_ALL_RANKS_OK(report);
  expectAbsentRankNamed(report);
}

class HangReportProcesses : public ::testing::TestWithParam<const char*> {};

TEST_P(HangReportProcesses, ARankThatNeverCallsIsNamedAndEveryRankLogsItsFlightRecorder) {
  std::string dir = freshLogDir(strcmp(GetParam(), "tcp") == 0 ? "tcp" : "shm");
  RunReport report = runProcesses(3, absentRankBody, hangOptions(GetParam(), dir));
  BRAID_ASSERT_ALL_RANKS_OK(report);
  expectAbsentRankNamed(report);
  // Over shared memory rank 2 also sees that rank 0 has not read what it sent for #3.
  if (strcmp(GetParam(), "shm") == 0) {
    EXPECT_NE(report.valuesOf("error")[2].find("not yet read by rank 0"), std::string::npos)
        << report.valuesOf("error")[2];
  }
  std::vector<std::string> pids = report.valuesOf("pid");
  for (int r = 1; r < 3; r++) {
    std::string log = logOf(dir, pids[r]);
    // The failure itself, then the recorder: the two completed operations and the failed one.
    EXPECT_NE(log.find("BRAID WARN rank " + std::to_string(r) + ": AllReduce #3 (Ring)"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("flight recorder: comm"), std::string::npos) << log;
    EXPECT_NE(log.find("rank " + std::to_string(r) + " of 3, after the first failure"),
              std::string::npos)
        << log;
    // What each rank heard last: rank 1 receives from rank 0, rank 2 from rank 1.
    EXPECT_NE(log.find(r == 1 ? "rank 0 at #2" : "rank 1 at #3"), std::string::npos) << log;
    EXPECT_NE(log.find("AllReduce #2, 40 bytes, Ring, done"), std::string::npos) << log;
    EXPECT_NE(log.find("AllReduce #3, 4000 bytes, Ring, FAILED"), std::string::npos) << log;
  }
  removeDir(dir);
}

INSTANTIATE_TEST_SUITE_P(Transports, HangReportProcesses, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

// A receive whose sender never sends: the point-to-point timeout names the pending transfer, its
// peer and its per-peer sequence number, and the communicator fails like a collective's.
TEST(HangReport, APointToPointTimeoutNamesThePendingTransfer) {
  RunReport report = runProcesses(
      2,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        std::vector<int32_t> buf(300, ctx.rank());
        // One matched transfer first, checked, so the stalled one is #2 of the pair.
        if (ctx.rank() == 0) {
          ASSERT_EQ(ncclSend(buf.data(), 300, ncclInt32, 1, comm, nullptr), ncclSuccess);
        } else {
          ASSERT_EQ(ncclRecv(buf.data(), 300, ncclInt32, 0, comm, nullptr), ncclSuccess);
          for (int32_t v : buf) ASSERT_EQ(v, 0);
        }
        if (ctx.rank() == 1) {
          ASSERT_EQ(braidCommSetTimeout(comm, kTimeoutS), ncclSuccess);
          double start = now();
          EXPECT_EQ(ncclRecv(buf.data(), 300, ncclInt32, 0, comm, nullptr), ncclRemoteError);
          double seconds = now() - start;
          EXPECT_GE(seconds, kTimeoutS - 0.1);
          EXPECT_LE(seconds, kTimeoutS + kSlackS);
          std::string text = ncclGetLastError(comm);
          EXPECT_NE(text.find("timed out after 0.5 s (BRAID_TIMEOUT_S) on rank 1 with 1 transfers "
                              "pending: receive from rank 0 #2 (0 of 1200 bytes)"),
                    std::string::npos)
              << text;
          ncclResult_t async = ncclSuccess;
          EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
          EXPECT_EQ(async, ncclRemoteError);
          EXPECT_NE(ncclRecv(buf.data(), 300, ncclInt32, 0, comm, nullptr), ncclSuccess);
        } else {
          std::this_thread::sleep_for(std::chrono::duration<double>(kTimeoutS + 1));
        }
        EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      },
      hangOptions("shm", ""));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// SIGUSR1 makes a live process dump every communicator it has, without disturbing it.
TEST(FlightRecorder, Sigusr1DumpsEveryLiveCommunicator) {
  std::string dir = freshLogDir("sigusr1");
  RunOptions o = hangOptions("shm", dir);
  o.env.push_back({"BRAID_SIGUSR1_DUMP", "1"});
  o.env.push_back({"BRAID_FLIGHT_RECORDER_SIZE", "4"});
  RunReport report = runProcesses(
      2,
      [dir](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        std::vector<double> v(3);
        for (int i = 0; i < 6; i++) {
          v = {1.0 * ctx.rank(), 2, 3};
          ASSERT_EQ(ncclAllReduce(v.data(), v.data(), 3, ncclFloat64, ncclMax, comm, nullptr),
                    ncclSuccess);
          EXPECT_EQ(v, (std::vector<double>{1, 2, 3}));
        }
        ASSERT_EQ(kill(getpid(), SIGUSR1), 0);
        std::string path = dir + "/rank." + std::to_string(getpid()) + ".log", log;
        for (int i = 0; i < 500 && log.find("AllReduce #6") == std::string::npos; i++) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          log = readFile(path);
        }
        EXPECT_NE(log.find("on SIGUSR1"), std::string::npos) << log;
        // Size 4: operations 3..6 are kept, 1 and 2 have left the ring.
        EXPECT_NE(log.find("AllReduce #3, 24 bytes, Ring, done"), std::string::npos) << log;
        EXPECT_NE(log.find("AllReduce #6, 24 bytes, Ring, done"), std::string::npos) << log;
        EXPECT_EQ(log.find("AllReduce #2,"), std::string::npos) << log;
        EXPECT_NE(log.find("rank " + std::to_string(1 - ctx.rank()) + " at #6"), std::string::npos)
            << log;
        // Still usable after the dump.
        EXPECT_EQ(braidBarrier(comm), ncclSuccess) << ncclGetLastError(comm);
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      },
      o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  removeDir(dir);
}

TEST(FlightRecorder, DisabledBySizeZeroAndSizeIsValidated) {
  std::string dir = freshLogDir("size");
  RunOptions o = hangOptions("local", dir);
  o.env.push_back({"BRAID_FLIGHT_RECORDER_SIZE", "0"});
  RunReport report = runProcesses(
      1,
      [dir](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        int x = 1;
        EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
        EXPECT_EQ(braidCommDumpFlightRecorder(comm), ncclSuccess);
        std::string log = readFile(dir + "/rank." + std::to_string(getpid()) + ".log");
        EXPECT_NE(log.find("disabled (BRAID_FLIGHT_RECORDER_SIZE=0)"), std::string::npos) << log;
        EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
        // An invalid size fails the next communicator's creation, naming the variable.
        setenv("BRAID_FLIGHT_RECORDER_SIZE", "-3", 1);
        ncclUniqueId id;
        ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
        ncclComm_t bad = nullptr;
        EXPECT_EQ(ncclCommInitRank(&bad, 1, id, 0), ncclInvalidArgument);
        EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("BRAID_FLIGHT_RECORDER_SIZE=-3"),
                  std::string::npos)
            << ncclGetLastError(nullptr);
      },
      o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  removeDir(dir);
}

TEST(Timeout, BadArgumentsAreRejectedWithTheirValue) {
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess);
  EXPECT_EQ(braidCommSetTimeout(nullptr, 1), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("comm is NULL"), std::string::npos);
  for (double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    EXPECT_EQ(braidCommSetTimeout(comm, bad), ncclInvalidArgument) << bad;
    EXPECT_NE(std::string(ncclGetLastError(comm)).find("seconds="), std::string::npos)
        << ncclGetLastError(comm);
  }
  EXPECT_EQ(braidCommGetTimeout(comm, nullptr), ncclInvalidArgument);
  double t = -1;
  ASSERT_EQ(braidCommSetTimeout(comm, 0), ncclSuccess);  // 0: no deadline
  ASSERT_EQ(braidCommGetTimeout(comm, &t), ncclSuccess);
  EXPECT_EQ(t, 0);
  ASSERT_EQ(braidCommSetTimeout(comm, 0.25), ncclSuccess);
  ASSERT_EQ(braidCommGetTimeout(comm, &t), ncclSuccess);
  EXPECT_EQ(t, 0.25);
  float x = 2;
  EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(x, 2);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_EQ(braidCommDumpFlightRecorder(comm), ncclInvalidArgument);  // destroyed
}

// BRAID_TIMEOUT_S takes fractions of a second (the tests' deadlines), and a value that is not a
// finite number of seconds >= 0 is refused by name rather than becoming no deadline at all.
TEST(Timeout, EnvironmentTakesFractionsAndRefusesTheRest) {
  const char* saved = getenv("BRAID_TIMEOUT_S");
  const std::string restore = saved ? saved : "";
  setenv("BRAID_TIMEOUT_S", "0.25", 1);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  double t = -1;
  ASSERT_EQ(braidCommGetTimeout(comm, &t), ncclSuccess);
  EXPECT_EQ(t, 0.25);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  for (const char* bad : {"-0.5", "nan"}) {
    setenv("BRAID_TIMEOUT_S", bad, 1);
    comm = nullptr;
    EXPECT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclInvalidArgument) << bad;
    EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("BRAID_TIMEOUT_S="), std::string::npos)
        << ncclGetLastError(nullptr);
    if (comm) ncclCommDestroy(comm);
  }
  if (saved)
    setenv("BRAID_TIMEOUT_S", restore.c_str(), 1);
  else
    unsetenv("BRAID_TIMEOUT_S");
}

}  // namespace
}  // namespace braid::test
