// Loading net plugins: each broken plugin is reported (file and what is wrong with it) and passed
// over for Braid's own TCP, or fails the init with that report when the user names its network.
// Ranks are forked processes: the loader runs once per process, so every case gets fresh ones.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "harness/rank_harness.h"
#include "nccl.h"

namespace braid::test {
namespace {

struct Broken {
  const char* name;
  const char* path;
  std::vector<std::string> reasons;  ///< what the report must say
};

std::vector<Broken> brokenPlugins() {
  return {
      {"NoSymbol", BROKEN_NO_SYMBOL, {"exports no ncclNetPlugin_v8 .. ncclNetPlugin_v11 symbol"}},
      {"OldVersion", BROKEN_OLD_VERSION, {"exports only ncclNetPlugin_v7", "v8 to v11"}},
      {"NullFunction", BROKEN_NULL_FUNCTION, {"ncclNetPlugin_v10.isend is NULL"}},
      {"InitFails", BROKEN_INIT_FAILS, {"ncclNetPlugin_v10.init returned", "system error"}},
      {"NoDevices", BROKEN_NO_DEVICES, {"Broken has no device"}},
  };
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh folder for the ranks' log files.
std::string logFolder() {
  char dir[] = "/tmp/braid-net-loader-XXXXXX";
  return mkdtemp(dir) ? dir : "";
}

// The logs of the processes that created a communicator (the parent logs its unique id too).
std::vector<std::string> rankLogsIn(const std::string& dir) {
  std::vector<std::string> texts;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string text = readFile(dir + "/" + e->d_name);
      if (text.find("Init COMPLETE") != std::string::npos) texts.push_back(std::move(text));
    }
    closedir(d);
  }
  return texts;
}

// Every rank: an exact allreduce of 1031 ints (output poisoned first).
void exactAllReduce(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  constexpr int kCount = 1031;
  std::vector<int> in(kCount), out(kCount, -7);
  for (int i = 0; i < kCount; i++) in[i] = i * 3 + ctx.rank();
  ASSERT_EQ(ncclAllReduce(in.data(), out.data(), kCount, ncclInt32, ncclSum, comm, nullptr),
            ncclSuccess)
      << ncclGetLastError(comm);
  for (int i = 0; i < kCount; i++) {
    int expected = 0;
    for (int r = 0; r < ctx.nranks(); r++) expected += i * 3 + r;
    ASSERT_EQ(out[i], expected) << "element " << i;
  }
  ncclCommDestroy(comm);
}

void PrintTo(const Broken& b, std::ostream* os) {
  *os << b.name;
}

class BrokenPlugin : public ::testing::TestWithParam<Broken> {};

TEST_P(BrokenPlugin, IsReportedAndPassedOverForTheOwnTcp) {
  const Broken& b = GetParam();
  const std::string dir = logFolder();
  ASSERT_FALSE(dir.empty());
  RunOptions o;
  o.timeoutS = 60;
  o.env = {{"NCCL_NET_PLUGIN", b.path},
           {"NCCL_SOCKET_IFNAME", "lo"},
           {"NCCL_DEBUG", "INFO"},
           {"NCCL_DEBUG_SUBSYS", "INIT,NET"},
           {"NCCL_DEBUG_FILE", dir + "/rank.%p"}};
  RunReport report = runProcesses(2, exactAllReduce, o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
  const std::vector<std::string> logs = rankLogsIn(dir);
  ASSERT_EQ(logs.size(), 2u) << "one log per rank in " << dir;
  for (const std::string& log : logs) {
    EXPECT_NE(log.find(std::string("NET/Plugin: ") + b.path), std::string::npos) << log;
    for (const std::string& reason : b.reasons)
      EXPECT_NE(log.find(reason), std::string::npos) << log;
    EXPECT_NE(log.find("Using network Socket"), std::string::npos) << log;
  }
  std::system(("rm -rf " + dir).c_str());
}

TEST_P(BrokenPlugin, FailsTheInitWhenNamed) {
  const Broken& b = GetParam();
  RunOptions o;
  o.timeoutS = 60;
  o.env = {{"NCCL_NET_PLUGIN", b.path}, {"NCCL_NET", "Broken"}, {"NCCL_SOCKET_IFNAME", "lo"}};
  RunReport report = runProcesses(
      2,
      [&](RankContext& ctx) {
        ncclComm_t comm = nullptr;
        const ncclResult_t r = ncclCommInitRank(&comm, ctx.nranks(), ctx.id(), ctx.rank());
        EXPECT_EQ(r, ncclInvalidArgument);
        const std::string text = ncclGetLastError(nullptr);
        EXPECT_NE(text.find("network \"Broken\""), std::string::npos) << text;
        EXPECT_NE(text.find(b.path), std::string::npos) << text;
        for (const std::string& reason : b.reasons)
          EXPECT_NE(text.find(reason), std::string::npos) << text;
        if (r == ncclSuccess) ncclCommDestroy(comm);
      },
      o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

INSTANTIATE_TEST_SUITE_P(NetLoader, BrokenPlugin, ::testing::ValuesIn(brokenPlugins()),
                         [](const ::testing::TestParamInfo<Broken>& info) {
                           return std::string(info.param.name);
                         });

TEST(NetLoader, SocketByNameIsTheOwnTcpWhateverPluginIsThere) {
  RunOptions o;
  o.timeoutS = 60;
  o.env = {{"NCCL_NET_PLUGIN", BROKEN_INIT_FAILS},
           {"NCCL_NET", "socket"},  // matched without case, as NCCL does
           {"NCCL_SOCKET_IFNAME", "lo"}};
  RunReport report = runProcesses(3, exactAllReduce, o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

TEST(NetLoader, UnknownNetworkInTheConfigFailsTheInit) {
  RunOptions o;
  o.timeoutS = 60;
  o.env = {{"NCCL_NET_PLUGIN", "none"}, {"NCCL_SOCKET_IFNAME", "lo"}};
  RunReport report = runProcesses(
      2,
      [&](RankContext& ctx) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.netName = "NoSuchNet";
        ncclComm_t comm = nullptr;
        const ncclResult_t r =
            ncclCommInitRankConfig(&comm, ctx.nranks(), ctx.id(), ctx.rank(), &config);
        EXPECT_EQ(r, ncclInvalidArgument);
        const std::string text = ncclGetLastError(nullptr);
        EXPECT_NE(text.find("network \"NoSuchNet\""), std::string::npos) << text;
        // Braid looked for the network's own plugin file as well.
        EXPECT_NE(text.find("libnccl-net-nosuchnet.so"), std::string::npos) << text;
        if (r == ncclSuccess) ncclCommDestroy(comm);
      },
      o);
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
}  // namespace braid::test
