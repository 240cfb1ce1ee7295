// ncclMemAlloc, ncclCommRegister and ncclCommWindowRegister refuse bad arguments with a text
// naming them, and a refused call leaves the communicator usable.
#include <cstdint>

#include "badinput/bad_input_util.h"

namespace braid::badinput {
namespace {

using RegistrationArguments = OneRankComm;

TEST_F(RegistrationArguments, MemAllocAndFree) {
  void* p = nullptr;
  EXPECT_TRUE(refused(ncclMemAlloc(nullptr, 64), ncclInvalidArgument, {"ptr is NULL"}));
  EXPECT_TRUE(refused(ncclMemAlloc(&p, 0), ncclInvalidArgument, {"size is 0"}));
  EXPECT_TRUE(refused(ncclMemAlloc(&p, SIZE_MAX), ncclInvalidArgument, {"too large"}));
  EXPECT_TRUE(refused(ncclMemFree(send_), ncclInvalidArgument, {"not returned by ncclMemAlloc"}));
  ASSERT_EQ(ncclMemAlloc(&p, 100), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);  // NCCL_WIN_REQUIRED_ALIGNMENT
  static_cast<char*>(p)[99] = 1;
  EXPECT_TRUE(refused(ncclMemFree(static_cast<char*>(p) + 8), ncclInvalidArgument,
                      {"not returned by ncclMemAlloc"}));
  EXPECT_EQ(ncclMemFree(p), ncclSuccess);
  EXPECT_TRUE(refused(ncclMemFree(p), ncclInvalidArgument, {"freed already"}));
  EXPECT_EQ(ncclMemFree(nullptr), ncclSuccess);
}

TEST_F(RegistrationArguments, Register) {
  void* handle = nullptr;
  EXPECT_TRUE(refused(ncclCommRegister(comm_, send_, sizeof(send_), nullptr), ncclInvalidArgument,
                      {"handle is NULL"}, comm_));
  EXPECT_TRUE(refused(ncclCommRegister(comm_, nullptr, 64, &handle), ncclInvalidArgument,
                      {"buff is NULL"}, comm_));
  EXPECT_TRUE(refused(ncclCommRegister(comm_, send_, 0, &handle), ncclInvalidArgument,
                      {"size is 0"}, comm_));
  EXPECT_TRUE(
      refused(ncclCommRegister(nullptr, send_, 64, &handle), ncclInvalidArgument, {"comm"}));
  EXPECT_TRUE(refused(ncclCommDeregister(comm_, send_), ncclInvalidArgument,
                      {"not a registration of this communicator"}, comm_));
  ASSERT_EQ(ncclCommRegister(comm_, send_, sizeof(send_), &handle), ncclSuccess);
  ASSERT_NE(handle, nullptr);
  EXPECT_EQ(ncclCommDeregister(comm_, handle), ncclSuccess);
  EXPECT_TRUE(refused(ncclCommDeregister(comm_, handle), ncclInvalidArgument,
                      {"not a registration"}, comm_));
}

TEST_F(RegistrationArguments, Window) {
  ncclWindow_t win = nullptr;
  EXPECT_TRUE(refused(ncclCommWindowRegister(comm_, send_, sizeof(send_), nullptr, 0),
                      ncclInvalidArgument, {"win is NULL"}, comm_));
  EXPECT_TRUE(refused(ncclCommWindowRegister(comm_, send_, sizeof(send_), &win, 6),
                      ncclInvalidArgument, {"winFlags 6"}, comm_));
  EXPECT_TRUE(refused(ncclCommWindowRegister(comm_, nullptr, 64, &win, 0), ncclInvalidArgument,
                      {"buff is NULL"}, comm_));
  void* handle = nullptr;
  ASSERT_EQ(ncclCommRegister(comm_, send_, sizeof(send_), &handle), ncclSuccess);
  // A registration handle is not a window, nor the other way round.
  EXPECT_TRUE(refused(ncclCommWindowDeregister(comm_, static_cast<ncclWindow_t>(handle)),
                      ncclInvalidArgument, {"not a window of this communicator"}, comm_));
  ASSERT_EQ(ncclCommWindowRegister(comm_, send_, sizeof(send_), &win, NCCL_WIN_COLL_SYMMETRIC),
            ncclSuccess)
      << ncclGetLastError(comm_);
  EXPECT_TRUE(
      refused(ncclCommDeregister(comm_, win), ncclInvalidArgument, {"not a registration"}, comm_));
  EXPECT_EQ(ncclCommWindowDeregister(comm_, win), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(comm_, handle), ncclSuccess);
}

TEST_F(RegistrationArguments, RefusalsLeaveTheCommunicatorUsable) {
  ncclWindow_t win;
  ncclCommWindowRegister(comm_, nullptr, 64, &win, 0);
  ncclCommDeregister(comm_, send_);
  ASSERT_EQ(ncclAllReduce(send_, recv_, 8, ncclFloat32, ncclMax, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  for (int i = 0; i < 8; i++) EXPECT_EQ(recv_[i], send_[i]);
}

}  // namespace
}  // namespace braid::badinput
