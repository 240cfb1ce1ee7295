// Invalid arguments to the implemented entry points: each is refused with ncclInvalidArgument
// and a ncclGetLastError text that names the argument and its value, and the communicator stays
// usable afterwards.
#include <cstring>
#include <random>

#include "badinput/bad_input_util.h"

namespace braid::badinput {
namespace {

class Arguments : public OneRankComm {};

TEST_F(Arguments, NullBuffersWithElementsAreRefused) {
  EXPECT_TRUE(refused(ncclAllReduce(nullptr, recv_, 8, ncclFloat32, ncclSum, comm_, nullptr),
                      ncclInvalidArgument, {"sendbuff", "NULL", "count=8"}, comm_));
  EXPECT_TRUE(refused(ncclAllReduce(send_, nullptr, 8, ncclFloat32, ncclSum, comm_, nullptr),
                      ncclInvalidArgument, {"recvbuff", "NULL", "count=8"}, comm_));
  EXPECT_TRUE(refused(ncclAllReduce(nullptr, nullptr, 1, ncclFloat32, ncclSum, comm_, nullptr),
                      ncclInvalidArgument, {"buff", "NULL"}, comm_));
}

TEST_F(Arguments, NullBuffersWithoutElementsAreFine) {
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
}

TEST_F(Arguments, InvalidDataTypesAreRefused) {
  for (int dtype : {-1, 12, 99, 1 << 30}) {
    std::string value = "datatype=" + std::to_string(dtype);
    EXPECT_TRUE(refused(
        ncclAllReduce(send_, recv_, 8, static_cast<ncclDataType_t>(dtype), ncclSum, comm_, nullptr),
        ncclInvalidArgument, {value}, comm_));
    ncclRedOp_t op;
    float scalar = 1;
    EXPECT_TRUE(refused(ncclRedOpCreatePreMulSum(&op, &scalar, static_cast<ncclDataType_t>(dtype),
                                                 ncclScalarHostImmediate, comm_),
                        ncclInvalidArgument, {value}, comm_));
  }
}

TEST_F(Arguments, InvalidOpsAreRefused) {
  for (int op : {-1, 5, 6, 1000}) {
    EXPECT_TRUE(refused(
        ncclAllReduce(send_, recv_, 8, ncclFloat32, static_cast<ncclRedOp_t>(op), comm_, nullptr),
        ncclInvalidArgument, {"op=" + std::to_string(op)}, comm_));
  }
}

TEST_F(Arguments, InvalidScalarResidenceAndNullScalarAreRefused) {
  ncclRedOp_t op;
  float scalar = 2;
  EXPECT_TRUE(refused(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32,
                                               static_cast<ncclScalarResidence_t>(7), comm_),
                      ncclInvalidArgument, {"residence=7"}, comm_));
  EXPECT_TRUE(
      refused(ncclRedOpCreatePreMulSum(&op, nullptr, ncclFloat32, ncclScalarHostImmediate, comm_),
              ncclInvalidArgument, {"scalar", "NULL"}, comm_));
}

TEST_F(Arguments, NullOutputPointersAreRefused) {
  EXPECT_TRUE(refused(ncclCommCount(comm_, nullptr), ncclInvalidArgument, {"count", "NULL"}));
  EXPECT_TRUE(refused(ncclCommUserRank(comm_, nullptr), ncclInvalidArgument, {"rank", "NULL"}));
  EXPECT_TRUE(refused(ncclCommCuDevice(comm_, nullptr), ncclInvalidArgument, {"device", "NULL"}));
  EXPECT_TRUE(
      refused(ncclCommGetAsyncError(comm_, nullptr), ncclInvalidArgument, {"asyncError", "NULL"}));
  float scalar = 1;
  EXPECT_TRUE(refused(
      ncclRedOpCreatePreMulSum(nullptr, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
      ncclInvalidArgument, {"op", "NULL"}));
  EXPECT_TRUE(refused(ncclGetUniqueId(nullptr), ncclInvalidArgument, {"uniqueId", "NULL"}));
  EXPECT_TRUE(refused(ncclGetVersion(nullptr), ncclInvalidArgument, {"version", "NULL"}));
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_TRUE(refused(ncclCommInitRank(nullptr, 1, id, 0), ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(refused(ncclCommInitAll(nullptr, 2, nullptr), ncclInvalidArgument, {"comm", "NULL"}));
}

TEST_F(Arguments, TheCommunicatorStillWorksAfterRefusals) {
  ncclAllReduce(nullptr, recv_, 8, ncclFloat32, ncclSum, comm_, nullptr);
  ncclAllReduce(send_, recv_, 8, static_cast<ncclDataType_t>(99), ncclSum, comm_, nullptr);
  ncclAllReduce(send_, recv_, 8, ncclFloat32, static_cast<ncclRedOp_t>(1000), comm_, nullptr);
  ASSERT_EQ(ncclAllReduce(send_, recv_, 8, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  for (int i = 0; i < 8; i++) EXPECT_EQ(recv_[i], send_[i]);
  ncclResult_t async = ncclInternalError;
  ASSERT_EQ(ncclCommGetAsyncError(comm_, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess) << "argument errors must not poison the communicator";
}

// --- Communicator creation ---------------------------------------------------------------------

class InitArguments : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    ASSERT_EQ(ncclGetUniqueId(&id_), ncclSuccess) << ncclGetLastError(nullptr);
  }
  ncclUniqueId id_;
  ncclComm_t comm_ = reinterpret_cast<ncclComm_t>(0x1);  // must be overwritten (NULL) on failure
};

TEST_F(InitArguments, RankOutsideTheCommunicatorIsRefused) {
  for (auto [rank, nranks] : {std::pair{-1, 2}, std::pair{2, 2}, std::pair{5, 2}}) {
    EXPECT_TRUE(refused(ncclCommInitRank(&comm_, nranks, id_, rank), ncclInvalidArgument,
                        {"rank=" + std::to_string(rank), "nranks=" + std::to_string(nranks)}));
    EXPECT_EQ(comm_, nullptr) << "a failed init must leave NULL behind";
    comm_ = reinterpret_cast<ncclComm_t>(0x1);
  }
}

TEST_F(InitArguments, FewerThanOneRankIsRefused) {
  for (int nranks : {0, -1, -100}) {
    EXPECT_TRUE(refused(ncclCommInitRank(&comm_, nranks, id_, 0), ncclInvalidArgument,
                        {"nranks=" + std::to_string(nranks)}));
  }
  ncclComm_t comms[2];
  EXPECT_TRUE(refused(ncclCommInitAll(comms, 0, nullptr), ncclInvalidArgument, {"ndev=0"}));
}

TEST_F(InitArguments, GarbageUniqueIdsAreRefused) {
  ncclUniqueId zeros;
  memset(&zeros, 0, sizeof(zeros));
  EXPECT_TRUE(refused(ncclCommInitRank(&comm_, 2, zeros, 0), ncclInvalidArgument, {"commId"}));
  std::mt19937 rng(99);
  for (int trial = 0; trial < 20; trial++) {
    ncclUniqueId junk;
    for (char& b : junk.internal) b = static_cast<char>(rng());
    EXPECT_TRUE(refused(ncclCommInitRank(&comm_, 2, junk, 1), ncclInvalidArgument, {"commId"}));
  }
  // A real id with one byte flipped past its fields: refused, not waited on.
  ncclUniqueId flipped = id_;
  flipped.internal[sizeof(flipped.internal) - 1] ^= 0x40;
  EXPECT_TRUE(refused(ncclCommInitRank(&comm_, 2, flipped, 0), ncclInvalidArgument, {"commId"}));
}

TEST_F(InitArguments, BadConfigIsRefused) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 5;
  EXPECT_TRUE(refused(ncclCommInitRankConfig(&comm_, 1, id_, 0, &config), ncclInvalidArgument,
                      {"blocking=5"}));
  ncclConfig_t uninitialised;
  memset(&uninitialised, 0, sizeof(uninitialised));
  EXPECT_TRUE(refused(ncclCommInitRankConfig(&comm_, 1, id_, 0, &uninitialised),
                      ncclInvalidArgument, {"magic"}));
}

// Settings read from the environment at init: a bad value is refused naming the variable and
// its value, and init then succeeds once it is gone.
TEST_F(InitArguments, BadTopologySettingsAreRefused) {
  const std::pair<const char*, const char*> bad[] = {{"BRAID_RINGS", "3"},
                                                     {"BRAID_RINGS", "0"},
                                                     {"BRAID_RING_ORDER", "sideways"},
                                                     {"BRAID_CONNECT", "sometimes"}};
  for (auto [name, value] : bad) {
    setenv(name, value, 1);
    EXPECT_TRUE(refused(ncclCommInitRank(&comm_, 1, id_, 0), ncclInvalidArgument,
                        {std::string(name) + "=" + value}));
    unsetenv(name);
    comm_ = reinterpret_cast<ncclComm_t>(0x1);
  }
  ASSERT_EQ(ncclCommInitRank(&comm_, 1, id_, 0), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
}

}  // namespace
}  // namespace braid::badinput
