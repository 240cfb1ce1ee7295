// Handles used outside their lifetime or their communicator: NULL and destroyed communicators,
// premulsum ops used on another communicator, after destruction, or with another dtype. All are
// refused with a text naming the handle; none crashes.
#include "badinput/bad_input_util.h"

namespace braid::badinput {
namespace {

TEST(NullComm, EveryEntryRefusesIt) {
  float buf[4] = {};
  int value = 0;
  ncclResult_t async;
  ncclRedOp_t op;
  float scalar = 1;
  EXPECT_TRUE(refused(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, nullptr, nullptr),
                      ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(refused(ncclCommCount(nullptr, &value), ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(refused(ncclCommUserRank(nullptr, &value), ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(refused(ncclCommCuDevice(nullptr, &value), ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(
      refused(ncclCommGetAsyncError(nullptr, &async), ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(refused(ncclCommFinalize(nullptr), ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(
      refused(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, nullptr),
              ncclInvalidArgument, {"comm", "NULL"}));
  EXPECT_TRUE(refused(ncclRedOpDestroy(ncclSum, nullptr), ncclInvalidArgument, {"comm", "NULL"}));
  // As in NCCL, destroying or aborting NULL is a no-op.
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
}

class DestroyedComm : public OneRankComm {};

TEST_F(DestroyedComm, UseAfterDestroyIsRefusedWithoutCrashing) {
  ncclComm_t gone = comm_;
  ASSERT_EQ(ncclCommDestroy(gone), ncclSuccess);
  comm_ = nullptr;  // TearDown must not destroy it again
  int value;
  ncclResult_t async;
  ncclRedOp_t op;
  float scalar = 1;
  const std::string live = "not a live communicator";
  EXPECT_TRUE(refused(ncclAllReduce(send_, recv_, 8, ncclFloat32, ncclSum, gone, nullptr),
                      ncclInvalidArgument, {live}));
  EXPECT_TRUE(refused(ncclCommCount(gone, &value), ncclInvalidArgument, {live}));
  EXPECT_TRUE(refused(ncclCommUserRank(gone, &value), ncclInvalidArgument, {live}));
  EXPECT_TRUE(refused(ncclCommGetAsyncError(gone, &async), ncclInvalidArgument, {live}));
  EXPECT_TRUE(
      refused(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, gone),
              ncclInvalidArgument, {live}));
  EXPECT_TRUE(refused(ncclCommDestroy(gone), ncclInvalidArgument, {live}));
  EXPECT_TRUE(refused(ncclCommAbort(gone), ncclInvalidArgument, {live}));
}

class PreMulSumOps : public OneRankComm {};

TEST_F(PreMulSumOps, AnOpBelongsToTheCommunicatorThatMadeIt) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t other = nullptr;
  ASSERT_EQ(ncclCommInitRank(&other, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  ncclRedOp_t op;
  float scalar = 2;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
            ncclSuccess)
      << ncclGetLastError(comm_);
  // `other` has created no op: the handle means nothing there.
  const std::string value = "op=" + std::to_string(static_cast<int>(op));
  EXPECT_TRUE(refused(ncclAllReduce(send_, recv_, 8, ncclFloat32, op, other, nullptr),
                      ncclInvalidArgument, {value}, other));
  EXPECT_TRUE(refused(ncclRedOpDestroy(op, other), ncclInvalidArgument, {value}, other));
  // On its own communicator it works, and multiplies.
  ASSERT_EQ(ncclAllReduce(send_, recv_, 8, ncclFloat32, op, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  for (int i = 0; i < 8; i++) EXPECT_EQ(recv_[i], 2 * send_[i]);
  EXPECT_EQ(ncclRedOpDestroy(op, comm_), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(other), ncclSuccess);
}

TEST_F(PreMulSumOps, ADestroyedOpIsRefused) {
  ncclRedOp_t op;
  float scalar = 3;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
            ncclSuccess);
  ASSERT_EQ(ncclRedOpDestroy(op, comm_), ncclSuccess);
  const std::string value = "op=" + std::to_string(static_cast<int>(op));
  EXPECT_TRUE(refused(ncclAllReduce(send_, recv_, 8, ncclFloat32, op, comm_, nullptr),
                      ncclInvalidArgument, {value}, comm_));
  EXPECT_TRUE(refused(ncclRedOpDestroy(op, comm_), ncclInvalidArgument, {value}, comm_));
}

TEST_F(PreMulSumOps, BuiltInOpsCannotBeDestroyed) {
  for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
    EXPECT_TRUE(refused(ncclRedOpDestroy(op, comm_), ncclInvalidArgument,
                        {"op=" + std::to_string(static_cast<int>(op))}, comm_));
  }
}

TEST_F(PreMulSumOps, AnOpIsForTheDataTypeItWasMadeFor) {
  ncclRedOp_t op;
  float scalar = 2;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, comm_),
            ncclSuccess);
  double dsend[8] = {}, drecv[8] = {};
  EXPECT_TRUE(refused(ncclAllReduce(dsend, drecv, 8, ncclFloat64, op, comm_, nullptr),
                      ncclInvalidArgument, {"datatype"}, comm_));
  EXPECT_EQ(ncclRedOpDestroy(op, comm_), ncclSuccess);
}

}  // namespace
}  // namespace braid::badinput
