// A rank that dies must not hang the others: with BRAID_TIMEOUT_S=5 every survivor gets an
// error from the call it is in (init or allreduce) within that time, can abort its communicator
// promptly, and nothing is left behind in /dev/shm. Ranks are forked processes; the victim
// _exit(1)s before init, during init, or in the middle of a stream of allreduces.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "badinput/bad_input_util.h"
#include "harness/rank_harness.h"

namespace braid::badinput {
namespace {

using test::Outcome;
using test::RankContext;

// BRAID_TIMEOUT_S: what a survivor waits when the victim never arrived (death is detected well
// before), and long enough for init and calls that must succeed on a loaded machine.
constexpr double kTimeoutS = 1;
// Scheduling noise on a small, shared machine (8 busy ranks on 2 cores).
constexpr double kSlackS = 2.5;
constexpr int kVictim = 1;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::set<std::string> braidShmSegments() {
  std::set<std::string> names;
  if (DIR* dir = opendir("/dev/shm")) {
    while (dirent* e = readdir(dir))
      if (std::string(e->d_name).rfind("braid-", 0) == 0) names.insert(e->d_name);
    closedir(dir);
  }
  return names;
}

// Segments that appeared during the test and are still there (after a moment for any other
// process's transient ones to go), listed and then removed so one failure does not litter.
std::string leftoverSegments(const std::set<std::string>& before) {
  std::set<std::string> left;
  for (int attempt = 0; attempt < 10; attempt++) {
    left.clear();
    for (const std::string& name : braidShmSegments())
      if (!before.count(name)) left.insert(name);
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::string list;
  for (const std::string& name : left) {
    list += " /dev/shm/" + name;
    unlink(("/dev/shm/" + name).c_str());
  }
  return list;
}

[[noreturn]] void dieAfter(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  _exit(1);
}

// What a survivor does once a call has failed: the failure sticks, and abort is prompt.
void afterFailure(RankContext& ctx, ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  if (ncclCommGetAsyncError(comm, &async) != ncclSuccess || async == ncclSuccess)
    ctx.fail("ncclCommGetAsyncError does not report the failure (" + std::to_string(async) + ")");
  float x = 1;
  double start = now();
  if (ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess)
    ctx.fail("an allreduce on the failed communicator succeeded");
  if (now() - start > 1) ctx.fail("an allreduce on the failed communicator waited");
  start = now();
  if (ncclCommAbort(comm) != ncclSuccess)
    ctx.fail(std::string("ncclCommAbort: ") + ncclGetLastError(nullptr));
  ctx.report("abort_s", std::to_string(now() - start));
}

// Survivor: initialise, then allreduce until a call fails; report how long the failing call
// took. `victimDies` runs in the victim instead.
void survivor(RankContext& ctx, size_t count) {
  std::vector<float> buf(count, 1.0f);
  double start = now();
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
  if (r != ncclSuccess) {
    ctx.report("failed_in", "init");
    ctx.report("failed_call_s", std::to_string(now() - start));
    ctx.report("error", ncclGetLastError(nullptr));
    if (comm) ctx.fail("a failed init returned a communicator");
    return;
  }
  const double loopLimit = now() + 60;
  int done = 0;
  while (now() < loopLimit) {
    start = now();
    r = ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr);
    if (r != ncclSuccess) break;
    done++;
  }
  if (r == ncclSuccess) {
    ctx.fail("every allreduce succeeded for 60 s although a rank died");
    ncclCommAbort(comm);
    return;
  }
  ctx.report("failed_in", "allreduce");
  ctx.report("failed_call_s", std::to_string(now() - start));
  ctx.report("error", ncclGetLastError(comm));
  ctx.report("completed", std::to_string(done));
  afterFailure(ctx, comm);
}

void expectSurvivorsFailedInTime(const test::RunReport& report) {
  ASSERT_TRUE(report.setupError.empty()) << report.describe();
  for (const test::RankResult& r : report.ranks) {
    if (r.rank == kVictim) {
      EXPECT_EQ(r.outcome, Outcome::kExited) << report.describe();
      EXPECT_EQ(r.exitCode, 1) << report.describe();
      continue;
    }
    EXPECT_EQ(r.outcome, Outcome::kOk) << report.describe();
    auto value = [&](const char* key) {
      auto it = r.values.find(key);
      return it == r.values.end() ? std::string() : it->second;
    };
    ASSERT_FALSE(value("failed_call_s").empty()) << report.describe();
    double seconds = std::stod(value("failed_call_s"));
    EXPECT_LE(seconds, kTimeoutS + kSlackS)
        << "rank " << r.rank << " waited " << seconds << " s in " << value("failed_in")
        << " before failing: " << value("error");
    EXPECT_FALSE(value("error").empty()) << "rank " << r.rank << ": no ncclGetLastError text";
    if (!value("abort_s").empty()) {
      EXPECT_LE(std::stod(value("abort_s")), 2.0) << "rank " << r.rank << ": slow abort";
    }
  }
}

test::RunOptions peerExitOptions(const char* transport, const char* algo) {
  test::RunOptions options;
  options.env = {{"BRAID_TIMEOUT_S", std::to_string(kTimeoutS)},
                 {"NCCL_SOCKET_IFNAME", "lo"},
                 {"BRAID_TRANSPORTS", transport},
                 {"NCCL_ALGO", algo},
                 {"BRAID_SLOT_BYTES", "4096"}};
  options.timeoutS = 60;
  return options;
}

TEST(PeerExit, APeerThatNeverArrivesFailsInit) {
  auto before = braidShmSegments();
  test::RunReport report = test::runProcesses(
      3,
      [](RankContext& ctx) {
        if (ctx.rank() == kVictim) _exit(1);
        survivor(ctx, 1);
        if (ctx.values().at("failed_in") != "init") ctx.fail("init succeeded without rank 1");
      },
      peerExitOptions("shm", "Ring"));
  expectSurvivorsFailedInTime(report);
  EXPECT_EQ(leftoverSegments(before), "");
}

struct InitDeath {
  const char* name;
  double delay;            ///< seconds after starting ncclCommInitRank
  bool whenSegmentMapped;  ///< instead: as soon as it has mapped its first shm segment
};

// True once this process maps a FIFO of the shm transport (a memfd, or a named segment where
// memfd is unavailable): the receiving side exists, and the other ranks have not connected yet.
bool mapsBraidSegment() {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[4096];
  bool found = false;
  while (!found && fgets(line, sizeof(line), f))
    found = strstr(line, "/dev/shm/braid-") || strstr(line, "memfd:braid-");
  fclose(f);
  return found;
}

void PrintTo(const InitDeath& d, std::ostream* os) {
  *os << d.name;
}

class PeerExitDuringInit : public ::testing::TestWithParam<InitDeath> {};

// The victim dies during ncclCommInitRank; the survivors fail either in init or in their first
// allreduce.
TEST_P(PeerExitDuringInit, SurvivorsFailInTime) {
  auto before = braidShmSegments();
  const InitDeath death = GetParam();
  test::RunReport report = test::runProcesses(
      4,
      [death](RankContext& ctx) {
        if (ctx.rank() == kVictim) {
          if (death.whenSegmentMapped) {
            std::thread([] {
              for (int i = 0; i < 30000 && !mapsBraidSegment(); i++) usleep(100);
              _exit(1);
            }).detach();
          } else {
            std::thread([delay = death.delay] { dieAfter(delay); }).detach();
          }
          ncclComm_t comm = nullptr;
          if (ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank()) == ncclSuccess) {
            float x[1024] = {};
            for (;;) ncclAllReduce(x, x, 1024, ncclFloat32, ncclSum, comm, nullptr);
          }
          dieAfter(10);  // init failed first: still die as a victim
        }
        survivor(ctx, 1024);
      },
      peerExitOptions("shm,tcp", "Ring"));
  expectSurvivorsFailedInTime(report);
  EXPECT_EQ(leftoverSegments(before), "") << "segments left behind";
}

INSTANTIATE_TEST_SUITE_P(Moments, PeerExitDuringInit,
                         ::testing::Values(InitDeath{"AtOnce", 0, false},
                                           InitDeath{"After2ms", 0.002, false},
                                           InitDeath{"After20ms", 0.02, false},
                                           InitDeath{"WhenItsSegmentIsMapped", 0, true}),
                         [](const ::testing::TestParamInfo<InitDeath>& info) {
                           return std::string(info.param.name);
                         });

struct MidRun {
  const char* transport;
  const char* algo;
};

void PrintTo(const MidRun& m, std::ostream* os) {
  *os << m.transport << "/" << m.algo;
}

class PeerExitMidAllReduce : public ::testing::TestWithParam<MidRun> {};

// The victim completes a few allreduces, then dies while in the next one (a large count in
// small slots takes thousands of steps).
TEST_P(PeerExitMidAllReduce, SurvivorsFailInTime) {
  auto before = braidShmSegments();
  const size_t count = GetParam().algo == std::string("Tree") ? 16384 : (1u << 20);
  test::RunReport report = test::runProcesses(
      3,
      [count](RankContext& ctx) {
        if (ctx.rank() != kVictim) return survivor(ctx, count);
        ncclComm_t comm = ctx.initComm();
        if (!comm) dieAfter(0);
        std::vector<float> buf(count, 1.0f);
        for (int i = 0; i < 3; i++)
          ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr);
        std::thread([] { dieAfter(0.005); }).detach();
        for (;;) ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr);
      },
      peerExitOptions(GetParam().transport, GetParam().algo));
  expectSurvivorsFailedInTime(report);
  for (const test::RankResult& r : report.ranks) {
    if (r.rank == kVictim) continue;
    EXPECT_EQ(r.values.count("failed_in") ? r.values.at("failed_in") : "", "allreduce")
        << report.describe();
  }
  EXPECT_EQ(leftoverSegments(before), "") << "segments left behind";
}

INSTANTIATE_TEST_SUITE_P(Transports, PeerExitMidAllReduce,
                         ::testing::Values(MidRun{"shm", "Ring"}, MidRun{"tcp", "Ring"},
                                           MidRun{"shm", "Tree"}),
                         [](const ::testing::TestParamInfo<MidRun>& info) {
                           return std::string(info.param.transport) + "_" + info.param.algo;
                         });

}  // namespace
}  // namespace braid::badinput
