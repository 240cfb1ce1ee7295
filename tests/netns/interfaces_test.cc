// Several interfaces (label netns): two namespace hosts, each with eth0 and eth1 on bridges of
// their own, NCCL_SOCKET_IFNAME=eth0,eth1. A TCP connection's sockets take the interfaces in
// turn, so a 16 MiB allreduce between the two hosts must send a good share of its bytes on each
// link (read from the interfaces' counters inside each rank's namespace), and stay exact.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "harness/rank_harness.h"
#include "nccl.h"

namespace braid::test {
namespace {

constexpr size_t kCount = (16u << 20) / 4;

uint64_t sentOn(const std::string& dev) {
  std::ifstream in("/sys/class/net/" + dev + "/statistics/tx_bytes");
  uint64_t bytes = 0;
  in >> bytes;
  return bytes;
}

void allReduceOverTwoLinks(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  std::vector<int32_t> in(kCount), out(kCount, INT32_MIN);
  for (size_t i = 0; i < kCount; i++) in[i] = static_cast<int32_t>(i % 10007) * (me + 1);
  const uint64_t before0 = sentOn("eth0"), before1 = sentOn("eth1");
  if (ncclAllReduce(in.data(), out.data(), kCount, ncclInt32, ncclSum, comm, nullptr) !=
      ncclSuccess)
    return ctx.fail(std::string("ncclAllReduce: ") + ncclGetLastError(comm));
  ctx.report("eth0", std::to_string(sentOn("eth0") - before0));
  ctx.report("eth1", std::to_string(sentOn("eth1") - before1));
  const int32_t ranksSum = n * (n + 1) / 2;
  for (size_t i = 0; i < kCount; i++)
    if (out[i] != static_cast<int32_t>(i % 10007) * ranksSum)
      return ctx.fail("element " + std::to_string(i) + " is " + std::to_string(out[i]));
  ncclCommDestroy(comm);
}

TEST(Interfaces, EveryListedInterfaceCarriesItsShare) {
  BRAID_SKIP_WITHOUT_NAMESPACES();
  NamespaceOptions options;
  options.namespaces = 2;
  options.interfaces = 2;
  options.timeoutS = 90;
  options.env = {{"BRAID_TIMEOUT_S", "30"}, {"NCCL_ALGO", "allreduce:ring"}};
  RunReport report = runInNamespaces(2, allReduceOverTwoLinks, options);
  BRAID_ASSERT_ALL_RANKS_OK(report);
  if (isNamespaceChild()) return;
  // Each rank sends (n-1)/n of the message twice: 16 MiB between the two; each link must carry
  // at least a third of it (two sockets, one per interface, slots striped over them).
  const std::vector<std::string> eth0 = report.valuesOf("eth0"), eth1 = report.valuesOf("eth1");
  for (size_t r = 0; r < eth0.size(); r++) {
    const double on0 = std::stod(eth0[r]), on1 = std::stod(eth1[r]);
    const double payload = 4.0 * kCount;
    EXPECT_GT(on0, payload / 3) << "rank " << r << " sent " << on0 << " B on eth0, " << on1
                                << " B on eth1";
    EXPECT_GT(on1, payload / 3) << "rank " << r << " sent " << on0 << " B on eth0, " << on1
                                << " B on eth1";
  }
}

}  // namespace
}  // namespace braid::test
