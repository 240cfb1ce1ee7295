// Invalid arguments to the entry points the other lists miss: point-to-point (Send, Recv),
// AlltoAll, Gather, Scatter, CommSplit, CommInitRankScalable, a group end without a start, and
// an unknown result code. Each is refused with a text naming the argument and its value, and
// the communicator stays usable.
#include <vector>

#include "badinput/bad_input_util.h"

namespace braid::badinput {
namespace {

class MoreArguments : public OneRankComm {};

TEST_F(MoreArguments, PeersOutsideTheCommunicatorAreRefused) {
  for (int peer : {-1, 1, 1000}) {
    const std::string value = "peer=" + std::to_string(peer);
    EXPECT_TRUE(refused(ncclSend(send_, 8, ncclFloat32, peer, comm_, nullptr), ncclInvalidArgument,
                        {"ncclSend", value}, comm_));
    EXPECT_TRUE(refused(ncclRecv(recv_, 8, ncclFloat32, peer, comm_, nullptr), ncclInvalidArgument,
                        {"ncclRecv", value}, comm_));
  }
}

TEST_F(MoreArguments, PointToPointNullBuffersAndBadTypesAreRefused) {
  EXPECT_TRUE(refused(ncclSend(nullptr, 8, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument,
                      {"sendbuff", "NULL", "count=8"}, comm_));
  EXPECT_TRUE(refused(ncclRecv(nullptr, 8, ncclFloat32, 0, comm_, nullptr), ncclInvalidArgument,
                      {"recvbuff", "NULL", "count=8"}, comm_));
  EXPECT_TRUE(refused(ncclSend(send_, 8, static_cast<ncclDataType_t>(42), 0, comm_, nullptr),
                      ncclInvalidArgument, {"datatype=42"}, comm_));
}

TEST_F(MoreArguments, RootedPointToPointCollectivesCheckRootAndBuffers) {
  for (int root : {-1, 1, 77}) {
    const std::string value = "root=" + std::to_string(root);
    EXPECT_TRUE(refused(ncclGather(send_, recv_, 8, ncclFloat32, root, comm_, nullptr),
                        ncclInvalidArgument, {"ncclGather", value}, comm_));
    EXPECT_TRUE(refused(ncclScatter(send_, recv_, 8, ncclFloat32, root, comm_, nullptr),
                        ncclInvalidArgument, {"ncclScatter", value}, comm_));
  }
  EXPECT_TRUE(refused(ncclGather(nullptr, recv_, 8, ncclFloat32, 0, comm_, nullptr),
                      ncclInvalidArgument, {"sendbuff", "NULL"}, comm_));
  EXPECT_TRUE(refused(ncclScatter(send_, nullptr, 8, ncclFloat32, 0, comm_, nullptr),
                      ncclInvalidArgument, {"recvbuff", "NULL"}, comm_));
}

TEST_F(MoreArguments, AlltoAllChecksBuffersAndRefusesInPlace) {
  EXPECT_TRUE(refused(ncclAlltoAll(nullptr, recv_, 8, ncclFloat32, comm_, nullptr),
                      ncclInvalidArgument, {"sendbuff", "NULL"}, comm_));
  EXPECT_TRUE(refused(ncclAlltoAll(send_, send_, 8, ncclFloat32, comm_, nullptr),
                      ncclInvalidArgument, {"out-of-place"}, comm_));
  EXPECT_TRUE(
      refused(ncclAlltoAll(send_, recv_, 8, static_cast<ncclDataType_t>(-3), comm_, nullptr),
              ncclInvalidArgument, {"datatype=-3"}, comm_));
}

TEST_F(MoreArguments, SplitRefusesBadColorsAndNullOutput) {
  ncclComm_t child = reinterpret_cast<ncclComm_t>(0x1);
  EXPECT_TRUE(refused(ncclCommSplit(comm_, -5, 0, &child, nullptr), ncclInvalidArgument,
                      {"color=-5"}, comm_));
  EXPECT_TRUE(refused(ncclCommSplit(comm_, 0, 0, nullptr, nullptr), ncclInvalidArgument,
                      {"newcomm", "NULL"}, comm_));
}

TEST_F(MoreArguments, ScalableInitRefusesMissingIds) {
  ncclComm_t comm = nullptr;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_TRUE(refused(ncclCommInitRankScalable(&comm, 1, 0, 0, &id, nullptr), ncclInvalidArgument,
                      {"nId=0"}));
  EXPECT_TRUE(refused(ncclCommInitRankScalable(&comm, 1, 0, 1, nullptr, nullptr),
                      ncclInvalidArgument, {"commIds", "NULL"}));
  EXPECT_TRUE(refused(ncclCommInitRankScalable(&comm, 2, 5, 1, &id, nullptr), ncclInvalidArgument,
                      {"rank=5"}));
}

TEST_F(MoreArguments, GroupEndWithoutStartIsRefused) {
  EXPECT_TRUE(refused(ncclGroupEnd(), ncclInvalidUsage, {"without a matching ncclGroupStart"}));
}

TEST_F(MoreArguments, UnknownResultCodesHaveAText) {
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(12345)), "unknown result code");
}

TEST_F(MoreArguments, TheCommunicatorStillWorksAfterwards) {
  ncclSend(send_, 8, ncclFloat32, 3, comm_, nullptr);
  ncclGather(send_, recv_, 8, ncclFloat32, -1, comm_, nullptr);
  ncclAlltoAll(send_, send_, 8, ncclFloat32, comm_, nullptr);
  ASSERT_EQ(ncclAllReduce(send_, recv_, 8, ncclFloat32, ncclSum, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  for (int i = 0; i < 8; i++) EXPECT_EQ(recv_[i], send_[i]);
}

}  // namespace
}  // namespace braid::badinput
