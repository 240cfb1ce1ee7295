// Ranks that disagree (label multiproc): calls whose count, datatype, op, root or collective
// differ between ranks, and a rank that aborts or never calls while the others wait. Braid must
// answer with an error within BRAID_TIMEOUT_S, never with a silently wrong result or a hang, and
// a rank that receives the other call's data must name both calls ("rank 1 called
// AllReduce(count=8192,float,sum) #3 but rank 0 called AllReduce(count=4096,float,sum) #3").
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"

namespace braid::test {
namespace {

constexpr double kDiagnosisTimeoutS = 5;
constexpr double kDiagnosisSlackS = 2.5;

double secondsNow() {
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
        double start = secondsNow();
        ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), d.count[side], d.dtype[side],
                                       d.op[side], comm, nullptr);
        ctx.report("seconds", std::to_string(secondsNow() - start));
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
    EXPECT_LE(std::stod(s), kDiagnosisTimeoutS + kDiagnosisSlackS) << report.describe();
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
// others must time out, not wait forever. Their call's deadline is short (braidCommSetTimeout):
// only its end matters here, and rank 0 has to outlive it.
TEST(Absent, ARankThatAbortsLeavesTheOthersWithATimeout) {
  constexpr double kCallTimeoutS = 0.5;
  RunReport report = runProcesses(
      3,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        if (ctx.rank() == 0) {
          ncclCommAbort(comm);
          std::this_thread::sleep_for(
              std::chrono::duration<double>(kCallTimeoutS + kDiagnosisSlackS + 1));
          return;
        }
        if (braidCommSetTimeout(comm, kCallTimeoutS) != ncclSuccess)
          ctx.fail(std::string("braidCommSetTimeout: ") + ncclGetLastError(comm));
        std::vector<float> buf(100000, 1.0f);
        double start = secondsNow();
        ncclResult_t r =
            ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
        double seconds = secondsNow() - start;
        if (r == ncclSuccess) ctx.fail("allreduce without rank 0 succeeded");
        if (seconds > kCallTimeoutS + kDiagnosisSlackS)
          ctx.fail("waited " + std::to_string(seconds) + " s");
        ctx.report("error", ncclGetLastError(comm));
        ncclCommAbort(comm);
      },
      options("shm", "Ring"));
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// --- The message names both calls ---------------------------------------------------------

// One rank's call in a named-mismatch scenario, and how the library must describe it.
struct Call {
  const char* coll;  // "AllReduce", "Reduce", "Broadcast", "Send", "Recv", "None"
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  int root;  // root, or peer for Send/Recv
  const char* described;
};

struct Named {
  const char* name;
  int agreeing;  // matching allreduces every rank runs first (so the mismatch is #agreeing+1)
  Call call[3];  // rank 0, 1, 2
};

// The descriptions are the library's format written out by hand: the test fails if the text
// changes, if a field is dropped, or if the wrong calls are named.
const Named kNamed[] = {
    {"Count",
     2,
     {{"AllReduce", 4096, ncclFloat32, ncclSum, 0, "AllReduce(count=4096,float,sum) #3"},
      {"AllReduce", 8192, ncclFloat32, ncclSum, 0, "AllReduce(count=8192,float,sum) #3"},
      {"AllReduce", 8192, ncclFloat32, ncclSum, 0, "AllReduce(count=8192,float,sum) #3"}}},
    {"DataType",
     0,
     {{"AllReduce", 1000, ncclInt32, ncclSum, 0, "AllReduce(count=1000,int32,sum) #1"},
      {"AllReduce", 1000, ncclFloat32, ncclSum, 0, "AllReduce(count=1000,float,sum) #1"},
      {"AllReduce", 1000, ncclFloat32, ncclSum, 0, "AllReduce(count=1000,float,sum) #1"}}},
    {"Op",
     0,
     {{"AllReduce", 1000, ncclFloat64, ncclMax, 0, "AllReduce(count=1000,double,max) #1"},
      {"AllReduce", 1000, ncclFloat64, ncclSum, 0, "AllReduce(count=1000,double,sum) #1"},
      {"AllReduce", 1000, ncclFloat64, ncclSum, 0, "AllReduce(count=1000,double,sum) #1"}}},
    {"Root",
     1,
     {{"Reduce", 513, ncclInt64, ncclMin, 0, "Reduce(count=513,int64,min,root=0) #2"},
      {"Reduce", 513, ncclInt64, ncclMin, 1, "Reduce(count=513,int64,min,root=1) #2"},
      {"Reduce", 513, ncclInt64, ncclMin, 1, "Reduce(count=513,int64,min,root=1) #2"}}},
    {"Collective",
     0,
     {{"AllReduce", 777, ncclFloat32, ncclSum, 0, "AllReduce(count=777,float,sum) #1"},
      {"Broadcast", 777, ncclFloat32, ncclSum, 1, "Broadcast(count=777,float,root=1) #1"},
      {"Broadcast", 777, ncclFloat32, ncclSum, 1, "Broadcast(count=777,float,root=1) #1"}}},
    // Broadcast roots that disagree: each self-declared root must fail (roll call), naming the
    // other root's call.
    {"BroadcastRoot",
     1,
     {{"Broadcast", 777, ncclFloat32, ncclSum, 0, "Broadcast(count=777,float,root=0) #2"},
      {"Broadcast", 777, ncclFloat32, ncclSum, 0, "Broadcast(count=777,float,root=0) #2"},
      {"Broadcast", 777, ncclFloat32, ncclSum, 2, "Broadcast(count=777,float,root=2) #2"}}},
    {"SendRecvBytes",
     0,
     {{"Send", 1024, ncclFloat32, ncclSum, 1, "Send(bytes=4096,peer=1) #1"},
      {"Recv", 2048, ncclFloat32, ncclSum, 0, "Recv(bytes=8192,peer=0) #1"},
      {"None", 0, ncclFloat32, ncclSum, 0, ""}}},
};

ncclResult_t issue(const Call& c, std::vector<double>& buf, ncclComm_t comm) {
  void* p = buf.data();
  if (!strcmp(c.coll, "AllReduce")) return ncclAllReduce(p, p, c.count, c.dtype, c.op, comm, 0);
  if (!strcmp(c.coll, "Reduce")) return ncclReduce(p, p, c.count, c.dtype, c.op, c.root, comm, 0);
  if (!strcmp(c.coll, "Broadcast")) return ncclBroadcast(p, p, c.count, c.dtype, c.root, comm, 0);
  if (!strcmp(c.coll, "Send")) return ncclSend(p, c.count, c.dtype, c.root, comm, 0);
  if (!strcmp(c.coll, "Recv")) return ncclRecv(p, c.count, c.dtype, c.root, comm, 0);
  return ncclSuccess;
}

// The exact sentence rank `me` must write when it received `peer`'s data.
std::string namedSentence(const Named& n, int me, int peer) {
  return "operation mismatch: rank " + std::to_string(me) + " called " + n.call[me].described +
         " but rank " + std::to_string(peer) + " called " + n.call[peer].described;
}

struct NamedCase {
  Named scenario;
  RankShape shape;
  const char* transports;
  const char* algo;
};

void PrintTo(const NamedCase& c, std::ostream* os) {
  *os << c.scenario.name << "/" << shapeName(c.shape) << "/" << c.transports << "/" << c.algo;
}

class NamedMismatch : public ::testing::TestWithParam<NamedCase> {};

TEST_P(NamedMismatch, TheDetectingRankNamesBothCalls) {
  const NamedCase c = GetParam();
  const Named n = c.scenario;
  RunOptions o;
  o.env = {{"NCCL_SOCKET_IFNAME", "lo"},
           {"BRAID_TIMEOUT_S", "4"},
           {"BRAID_TRANSPORTS", c.transports},
           {"NCCL_ALGO", c.algo},
           {"BRAID_SLOT_BYTES", "4096"}};
  o.timeoutS = 60;
  auto body = [n](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    // Agreeing calls first, checked exactly, so the mismatch has a sequence number > 1.
    for (int i = 0; i < n.agreeing; i++) {
      std::vector<int32_t> v(7);
      for (int k = 0; k < 7; k++) v[k] = ctx.rank() * 10 + k;
      if (ncclAllReduce(v.data(), v.data(), 7, ncclInt32, ncclSum, comm, 0) != ncclSuccess) {
        ctx.fail(std::string("agreeing allreduce failed: ") + ncclGetLastError(comm));
        ncclCommAbort(comm);
        return;
      }
      for (int k = 0; k < 7; k++)
        if (v[k] != 30 + 3 * k) ctx.fail("agreeing allreduce: wrong element " + std::to_string(k));
    }
    std::vector<double> buf(8192, 1.0);
    double start = secondsNow();
    ncclResult_t r = issue(n.call[ctx.rank()], buf, comm);
    ctx.report("seconds", std::to_string(secondsNow() - start));
    ctx.report("result", std::to_string(r));
    ctx.report("error", r == ncclSuccess ? "" : ncclGetLastError(comm));
    // Every rank leaves with destroy, which delivers what it already sent (over TCP it may still
    // be in its proxy's queue): the data of a sender whose part succeeded must reach the rank that
    // detects the mismatch, and the last agreeing allreduce's data must reach its peers before a
    // fast-failing rank goes (abort would drop it).
    ncclCommDestroy(comm);
  };
  RunReport report =
      c.shape == RankShape::kThreads ? runThreads(3, body, o) : runProcesses(3, body, o);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  std::vector<std::string> errors = report.valuesOf("error");
  int named = 0;
  for (int me = 0; me < 3; me++) {
    const std::string& text = errors[me];
    if (text.find("operation mismatch") == std::string::npos) continue;
    bool matched = false;
    for (int peer = 0; peer < 3; peer++)
      if (peer != me && strcmp(n.call[me].described, n.call[peer].described) != 0 &&
          text.find(namedSentence(n, me, peer)) != std::string::npos)
        matched = true;
    EXPECT_TRUE(matched) << "rank " << me
                         << " reported a mismatch without naming both calls: " << text;
    named += matched;
  }
  EXPECT_GE(named, 1) << "no rank named the mismatch; errors:\n  " << errors[0] << "\n  "
                      << errors[1] << "\n  " << errors[2] << "\n"
                      << report.describe();
  for (const std::string& s : report.valuesOf("seconds"))
    EXPECT_LE(std::stod(s), 4 + kDiagnosisSlackS) << report.describe();
}

std::vector<NamedCase> namedCases() {
  std::vector<NamedCase> cases;
  for (const Named& n : kNamed)
    for (RankShape shape : {RankShape::kThreads, RankShape::kProcesses})
      for (const char* t : {"local,shm", "tcp"}) cases.push_back({n, shape, t, "Ring"});
  // The tree moves allreduce data along other edges: the detecting ranks differ, the sentences
  // must not.
  for (const Named& n : kNamed)
    if (!strcmp(n.call[0].coll, "AllReduce") && !strcmp(n.call[1].coll, "AllReduce"))
      for (const char* t : {"local,shm", "tcp"})
        cases.push_back({n, RankShape::kProcesses, t, "Tree"});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Calls, NamedMismatch, ::testing::ValuesIn(namedCases()),
                         [](const auto& info) {
                           const NamedCase& c = info.param;
                           return std::string(c.scenario.name) + "_" + shapeName(c.shape) + "_" +
                                  (strcmp(c.transports, "tcp") == 0 ? "tcp" : "memory") + "_" +
                                  c.algo;
                         });

// Calls that never exchange a slot: at 4 ranks, rank 3 is a leaf of the allreduce tree (it must
// send first) and a child in the broadcast tree (it waits for its parent), while its parent, in
// the allreduce, waits for rank 3. No fingerprint ever crosses; only the calls the stalled ranks
// publish (mismatch_watch.h) reveal it, within a few tens of milliseconds instead of at the
// deadline.
class StallOnlyMismatch : public ::testing::TestWithParam<std::tuple<RankShape, const char*>> {};

TEST_P(StallOnlyMismatch, IsNamedLongBeforeTheDeadline) {
  const RankShape shape = std::get<0>(GetParam());
  RunOptions o;
  o.env = {{"NCCL_SOCKET_IFNAME", "lo"},
           {"BRAID_TIMEOUT_S", "8"},
           {"BRAID_TRANSPORTS", std::get<1>(GetParam())},
           {"NCCL_ALGO", "Tree"}};
  o.timeoutS = 60;
  auto body = [](RankContext& ctx) {
    ncclComm_t comm = ctx.initComm();
    if (!comm) return;
    std::vector<int32_t> v(4099, ctx.rank());
    if (ncclAllReduce(v.data(), v.data(), v.size(), ncclInt32, ncclSum, comm, 0) != ncclSuccess ||
        v[4098] != 6) {
      ctx.fail("the agreeing allreduce failed");
      ncclCommAbort(comm);
      return;
    }
    double start = secondsNow();
    ncclResult_t r = ctx.rank() == 3
                         ? ncclBroadcast(v.data(), v.data(), v.size(), ncclInt32, 0, comm, 0)
                         : ncclAllReduce(v.data(), v.data(), v.size(), ncclInt32, ncclSum, comm, 0);
    ctx.report("seconds", std::to_string(secondsNow() - start));
    if (r == ncclSuccess) ctx.fail("the mismatched call succeeded");
    ctx.report("error", r == ncclSuccess ? "" : ncclGetLastError(comm));
    ncclCommAbort(comm);
  };
  RunReport report =
      shape == RankShape::kThreads ? runThreads(4, body, o) : runProcesses(4, body, o);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  const std::string allreduce = "AllReduce(count=4099,int32,sum) #2";
  const std::string broadcast = "Broadcast(count=4099,int32,root=0) #2";
  int named = 0;
  std::vector<std::string> errors = report.valuesOf("error");
  for (int me = 0; me < 4; me++) {
    const std::string mine = me == 3 ? broadcast : allreduce;
    for (int peer = 0; peer < 4; peer++) {
      if ((me == 3) == (peer == 3)) continue;  // only the two calls that differ
      const std::string sentence = "operation mismatch: rank " + std::to_string(me) + " called " +
                                   mine + " but rank " + std::to_string(peer) + " called " +
                                   (peer == 3 ? broadcast : allreduce);
      named += errors[me].find(sentence) != std::string::npos;
    }
  }
  EXPECT_GE(named, 1) << report.describe();
  for (const std::string& s : report.valuesOf("seconds"))
    EXPECT_LE(std::stod(s), 2.0) << "a mismatch must be detected, not timed out\n"
                                 << report.describe();
}

INSTANTIATE_TEST_SUITE_P(Calls, StallOnlyMismatch,
                         ::testing::Combine(::testing::Values(RankShape::kThreads,
                                                              RankShape::kProcesses),
                                            ::testing::Values("local,shm", "tcp")),
                         [](const auto& info) {
                           return std::string(shapeName(std::get<0>(info.param))) + "_" +
                                  (strcmp(std::get<1>(info.param), "tcp") == 0 ? "tcp" : "memory");
                         });

}  // namespace
}  // namespace braid::test
