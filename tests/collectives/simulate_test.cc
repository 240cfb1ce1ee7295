// ncclGroupSimulateEnd: the group ends without running anything and reports the cost model's
// estimate (microseconds). Checked: nothing is written (outputs keep their poison), the estimate
// grows with the message and with a slower transport, the dropped work leaves no trace (the next
// real group gives exact results), and misuse is refused with a clear error.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/rank_harness.h"

namespace {

using braid::test::RankContext;

constexpr float kPoison = -12345.0f;

double simulateAllReduce(RankContext& ctx, ncclComm_t comm, size_t count) {
  std::vector<float> in(count, 1.0f), out(count, kPoison);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  if (ncclGroupStart() != ncclSuccess ||
      ncclAllReduce(in.data(), out.data(), count, ncclFloat32, ncclSum, comm, nullptr) !=
          ncclSuccess ||
      ncclGroupSimulateEnd(&info) != ncclSuccess) {
    ctx.fail(std::string("simulated allreduce: ") + ncclGetLastError(comm));
    return -1;
  }
  for (size_t i = 0; i < count; i++)
    if (out[i] != kPoison) {
      ctx.fail("a simulated allreduce wrote element " + std::to_string(i));
      break;
    }
  return info.estimatedTime;
}

void simulateThenRun(RankContext& ctx) {
  ncclComm_t comm = ctx.initComm();
  if (!comm) return;
  const int n = ctx.nranks(), me = ctx.rank();
  const double small = simulateAllReduce(ctx, comm, 257);
  const double large = simulateAllReduce(ctx, comm, 1 << 22);
  if (!(small > 0) || !(large > small))
    ctx.fail("estimates: 257 floats " + std::to_string(small) + " us, 4 Mi floats " +
             std::to_string(large) + " us");
  ctx.report("estimate_4Mi_us", std::to_string(large));

  // Point-to-point: a ring exchange, simulated, then run for real with other data.
  std::vector<int32_t> send(1009, me), recv(1009, -1);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  ncclGroupStart();
  ncclSend(send.data(), send.size(), ncclInt32, (me + 1) % n, comm, nullptr);
  ncclRecv(recv.data(), recv.size(), ncclInt32, (me + n - 1) % n, comm, nullptr);
  if (ncclGroupSimulateEnd(&info) != ncclSuccess || !(info.estimatedTime > 0))
    ctx.fail(std::string("simulated send/recv: ") + ncclGetLastError(comm));
  if (recv[0] != -1) ctx.fail("a simulated receive wrote its buffer");
  for (int32_t& v : send) v = 100 + me;
  ncclGroupStart();
  ncclSend(send.data(), send.size(), ncclInt32, (me + 1) % n, comm, nullptr);
  ncclRecv(recv.data(), recv.size(), ncclInt32, (me + n - 1) % n, comm, nullptr);
  if (ncclGroupEnd() != ncclSuccess) ctx.fail(std::string("send/recv: ") + ncclGetLastError(comm));
  for (size_t i = 0; i < recv.size(); i++)
    if (recv[i] != 100 + (me + n - 1) % n) {
      ctx.fail("send/recv after a simulated group: element " + std::to_string(i) + " is " +
               std::to_string(recv[i]));
      break;
    }

  // The point-to-point collectives simulate too (they are batches, not communicator changes).
  std::vector<int32_t> blocks(5 * n, me), gathered(5 * n, -1);
  ncclSimInfo_t a2a = NCCL_SIM_INFO_INITIALIZER;
  ncclGroupStart();
  ncclAlltoAll(blocks.data(), gathered.data(), 5, ncclInt32, comm, nullptr);
  ncclGather(blocks.data(), gathered.data(), 5, ncclInt32, 0, comm, nullptr);
  if (ncclGroupSimulateEnd(&a2a) != ncclSuccess || !(a2a.estimatedTime > 0))
    ctx.fail(std::string("simulated alltoall and gather: ") + ncclGetLastError(comm));
  for (int32_t v : gathered)
    if (v != -1) {
      ctx.fail("a simulated alltoall or gather wrote its output");
      break;
    }

  // And a real allreduce after the simulated ones.
  std::vector<int32_t> in(1013), out(1013, -1);
  for (size_t i = 0; i < in.size(); i++) in[i] = static_cast<int32_t>(i) * (me + 1);
  if (ncclAllReduce(in.data(), out.data(), in.size(), ncclInt32, ncclSum, comm, nullptr) !=
      ncclSuccess)
    ctx.fail(std::string("allreduce: ") + ncclGetLastError(comm));
  const int32_t factor = n * (n + 1) / 2;
  for (size_t i = 0; i < out.size(); i++)
    if (out[i] != static_cast<int32_t>(i) * factor) {
      ctx.fail("allreduce after simulated groups: element " + std::to_string(i));
      break;
    }
  ncclCommDestroy(comm);
}

braid::test::RunOptions options(const char* transports) {
  braid::test::RunOptions o;
  o.timeoutS = 120;
  // The built-in costs: constants measured at init (and cached per machine) on a loaded machine
  // can rank threads no faster than TCP, which this test compares.
  o.env = {{"BRAID_TRANSPORTS", transports},
           {"NCCL_SOCKET_IFNAME", "lo"},
           {"BRAID_TUNER_CALIBRATE", "0"}};
  return o;
}

TEST(GroupSimulateEnd, EstimatesWithoutRunning) {
  auto memory = braid::test::runThreads(3, simulateThenRun, options("local"));
  BRAID_EXPECT_ALL_RANKS_OK(memory);
  auto tcp = braid::test::runThreads(3, simulateThenRun, options("tcp"));
  BRAID_EXPECT_ALL_RANKS_OK(tcp);
  // The same 16 MiB allreduce costs more over TCP than between threads.
  ASSERT_EQ(memory.valuesOf("estimate_4Mi_us").size(), 3u);
  ASSERT_EQ(tcp.valuesOf("estimate_4Mi_us").size(), 3u);
  EXPECT_GT(std::stod(tcp.valuesOf("estimate_4Mi_us")[0]),
            std::stod(memory.valuesOf("estimate_4Mi_us")[0]));
}

TEST(GroupSimulateEnd, MisuseIsRefused) {
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("without a matching ncclGroupStart"),
            std::string::npos)
      << ncclGetLastError(nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupSimulateEnd(nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("simInfo is NULL"), std::string::npos);
  ncclSimInfo_t unset{};
  EXPECT_EQ(ncclGroupSimulateEnd(&unset), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("NCCL_SIM_INFO_INITIALIZER"),
            std::string::npos);
  // The refused calls left the group open: a proper simulated end closes it.
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
  EXPECT_EQ(info.estimatedTime, 0.0f);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

}  // namespace
