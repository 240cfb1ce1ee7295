// Namespace ranks really are on separate network stacks, reach each other only through the
// bridge, and leave no namespace behind, whether they succeed or fail.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <set>

#include "harness/rank_harness.h"

namespace braid::test {
namespace {

std::string eth0Address() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    if (std::string(a->ifa_name) != "eth0") continue;
    char buf[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
    out = buf;
  }
  freeifaddrs(list);
  return out;
}

int namespacesOfThisProcess() {
  int count = 0;
  std::string prefix = "braidt-" + std::to_string(getpid()) + "-";
  if (DIR* dir = opendir("/var/run/netns")) {
    while (dirent* e = readdir(dir))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) count++;
    closedir(dir);
  }
  return count;
}

void sumAcrossHosts(RankContext& ctx) {
  ctx.report("address", eth0Address());
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  int in = ctx.rank() + 1, out = -1;
  if (ncclAllReduce(&in, &out, 1, ncclInt32, ncclSum, comm, nullptr) != ncclSuccess)
    ctx.fail(std::string("ncclAllReduce: ") + ncclGetLastError(comm));
  ctx.report("sum", std::to_string(out));
  ncclCommDestroy(comm);
}

TEST(Namespaces, RanksLiveOnSeparateStacksAndReduceOverTcp) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  NamespaceOptions options;
  options.namespaces = 3;
  options.timeoutS = 60;
  RunReport report = runInNamespaces(3, sumAcrossHosts, options);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  std::vector<std::string> addresses = report.valuesOf("address");
  EXPECT_EQ(addresses[0], "10.213.0.1");
  EXPECT_EQ(addresses[1], "10.213.0.2");
  EXPECT_EQ(addresses[2], "10.213.0.3");
  for (const std::string& v : report.valuesOf("sum")) EXPECT_EQ(v, "6");
  if (!isNamespaceChild()) {
    EXPECT_EQ(namespacesOfThisProcess(), 0);
  }
}

TEST(Namespaces, BlocksPlacementSharesANamespace) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  NamespaceOptions options;
  options.namespaces = 2;
  options.placement = Placement::kBlocks;
  RunReport report = runInNamespaces(4, sumAcrossHosts, options);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  std::vector<std::string> addresses = report.valuesOf("address");
  EXPECT_EQ(addresses[0], addresses[1]);
  EXPECT_EQ(addresses[2], addresses[3]);
  EXPECT_NE(addresses[0], addresses[2]);
}

TEST(Namespaces, FailingRanksAreReportedAndNamespacesStillRemoved) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  NamespaceOptions options;
  options.timeoutS = 30;
  RunReport report = runInNamespaces(
      2,
      [](RankContext& ctx) {
        if (ctx.rank() == 1) _exit(5);
        ctx.fail("rank zero fails on purpose");
      },
      options);
  if (isNamespaceChild()) return;
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.ranks[0].outcome, Outcome::kFailed);
  EXPECT_EQ(report.ranks[1].outcome, Outcome::kExited);
  EXPECT_EQ(report.ranks[1].exitCode, 5);
  EXPECT_EQ(namespacesOfThisProcess(), 0);
}

TEST(Namespaces, SeveralRunsInOneTestPickTheRightCall) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  for (int round = 0; round < 2; round++) {
    RunReport report = runInNamespaces(
        2, [round](RankContext& ctx) { ctx.report("round", std::to_string(round)); });
    BRAID_ASSERT_ALL_RANKS_OK(report);
    if (isNamespaceChild()) continue;  // a child passes by the runs that are not its own
    for (const std::string& v : report.valuesOf("round")) EXPECT_EQ(v, std::to_string(round));
  }
}

}  // namespace
}  // namespace braid::test
