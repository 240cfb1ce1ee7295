// Invalid arguments to the collectives besides AllReduce (Broadcast, Bcast, Reduce, AllGather,
// ReduceScatter): roots outside the communicator, NULL buffers, bad datatypes and ops are refused
// with ncclInvalidArgument and a text naming the argument and value.
#include <functional>
#include <vector>

#include "badinput/bad_input_util.h"

namespace braid::badinput {
namespace {

class CollectiveArguments : public OneRankComm {};

TEST_F(CollectiveArguments, RootsOutsideTheCommunicatorAreRefused) {
  for (int root : {-1, 1, 1000}) {
    const std::string value = "root=" + std::to_string(root);
    EXPECT_TRUE(refused(ncclBroadcast(send_, recv_, 8, ncclFloat32, root, comm_, nullptr),
                        ncclInvalidArgument, {value}, comm_));
    EXPECT_TRUE(refused(ncclBcast(recv_, 8, ncclFloat32, root, comm_, nullptr), ncclInvalidArgument,
                        {value}, comm_));
    EXPECT_TRUE(refused(ncclReduce(send_, recv_, 8, ncclFloat32, ncclSum, root, comm_, nullptr),
                        ncclInvalidArgument, {value}, comm_));
  }
}

struct Call {
  const char* name;
  std::function<ncclResult_t(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t)>
      run;
};

std::vector<Call> collectives() {
  return {
      {"ncclBroadcast", [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t,
                           ncclComm_t c) { return ncclBroadcast(s, r, n, t, 0, c, nullptr); }},
      {"ncclBcast", [](const void*, void* r, size_t n, ncclDataType_t t, ncclRedOp_t,
                       ncclComm_t c) { return ncclBcast(r, n, t, 0, c, nullptr); }},
      {"ncclReduce", [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t o,
                        ncclComm_t c) { return ncclReduce(s, r, n, t, o, 0, c, nullptr); }},
      {"ncclAllGather", [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t,
                           ncclComm_t c) { return ncclAllGather(s, r, n, t, c, nullptr); }},
      {"ncclReduceScatter",
       [](const void* s, void* r, size_t n, ncclDataType_t t, ncclRedOp_t o, ncclComm_t c) {
         return ncclReduceScatter(s, r, n, t, o, c, nullptr);
       }},
  };
}

TEST_F(CollectiveArguments, InvalidDataTypesAreRefused) {
  for (const Call& call : collectives()) {
    for (int dtype : {-1, 12, 99}) {
      EXPECT_TRUE(
          refused(call.run(send_, recv_, 8, static_cast<ncclDataType_t>(dtype), ncclSum, comm_),
                  ncclInvalidArgument, {call.name, "datatype=" + std::to_string(dtype)}, comm_));
    }
  }
}

TEST_F(CollectiveArguments, NullBuffersWithElementsAreRefused) {
  for (const Call& call : collectives()) {
    EXPECT_TRUE(refused(call.run(send_, nullptr, 8, ncclFloat32, ncclSum, comm_),
                        ncclInvalidArgument, {call.name, "NULL"}, comm_));
    EXPECT_EQ(call.run(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm_), ncclSuccess)
        << call.name << " with count 0: " << ncclGetLastError(comm_);
  }
  // The root's send buffer (and, for AllGather and ReduceScatter, every rank's) is required.
  EXPECT_TRUE(refused(ncclBroadcast(nullptr, recv_, 8, ncclFloat32, 0, comm_, nullptr),
                      ncclInvalidArgument, {"sendbuff", "NULL"}, comm_));
  EXPECT_TRUE(refused(ncclReduce(nullptr, recv_, 8, ncclFloat32, ncclSum, 0, comm_, nullptr),
                      ncclInvalidArgument, {"sendbuff", "NULL"}, comm_));
  EXPECT_TRUE(refused(ncclAllGather(nullptr, recv_, 8, ncclFloat32, comm_, nullptr),
                      ncclInvalidArgument, {"sendbuff", "NULL"}, comm_));
}

TEST_F(CollectiveArguments, InvalidOpsAreRefusedByReductions) {
  for (int op : {-1, 5, 1000}) {
    const std::string value = "op=" + std::to_string(op);
    EXPECT_TRUE(refused(
        ncclReduce(send_, recv_, 8, ncclFloat32, static_cast<ncclRedOp_t>(op), 0, comm_, nullptr),
        ncclInvalidArgument, {value}, comm_));
    EXPECT_TRUE(refused(ncclReduceScatter(send_, recv_, 8, ncclFloat32,
                                          static_cast<ncclRedOp_t>(op), comm_, nullptr),
                        ncclInvalidArgument, {value}, comm_));
  }
}

TEST_F(CollectiveArguments, NullAndDestroyedCommunicatorsAreRefused) {
  for (const Call& call : collectives()) {
    EXPECT_TRUE(refused(call.run(send_, recv_, 8, ncclFloat32, ncclSum, nullptr),
                        ncclInvalidArgument, {call.name, "comm", "NULL"}));
  }
  ncclComm_t gone = comm_;
  ASSERT_EQ(ncclCommDestroy(gone), ncclSuccess);
  comm_ = nullptr;
  for (const Call& call : collectives()) {
    EXPECT_TRUE(refused(call.run(send_, recv_, 8, ncclFloat32, ncclSum, gone), ncclInvalidArgument,
                        {call.name, "not a live communicator"}));
  }
}

}  // namespace
}  // namespace braid::badinput
