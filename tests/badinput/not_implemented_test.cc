// Entry points of NCCL 2.28 that this version of Braid does not provide must say so
// (ncclInvalidUsage, "not implemented" and their name in ncclGetLastError) instead of pretending
// to succeed. When one gets implemented, remove it from this list and give it real tests.
#include <functional>
#include <vector>

#include "badinput/bad_input_util.h"

namespace braid::badinput {
namespace {

struct Entry {
  const char* name;
  std::function<ncclResult_t(ncclComm_t)> call;
};

class NotImplemented : public OneRankComm {
 protected:
  std::vector<Entry> entries() {
    static float buf[16];
    return {
        {"ncclCommRegister",
         [](ncclComm_t c) {
           void* handle;
           return ncclCommRegister(c, buf, sizeof(buf), &handle);
         }},
        {"ncclCommDeregister", [](ncclComm_t c) { return ncclCommDeregister(c, buf); }},
        {"ncclCommWindowRegister",
         [](ncclComm_t c) {
           ncclWindow_t win;
           return ncclCommWindowRegister(c, buf, sizeof(buf), &win, 0);
         }},
        {"ncclCommWindowDeregister",
         [](ncclComm_t c) { return ncclCommWindowDeregister(c, nullptr); }},
        {"ncclMemAlloc",
         [](ncclComm_t) {
           void* p;
           return ncclMemAlloc(&p, 64);
         }},
        {"ncclMemFree", [](ncclComm_t) { return ncclMemFree(buf); }},
    };
  }
};

TEST_F(NotImplemented, EachSaysSoByName) {
  for (const Entry& e : entries()) {
    EXPECT_TRUE(refused(e.call(comm_), ncclInvalidUsage, {"not implemented", e.name}, comm_))
        << e.name;
  }
}

TEST_F(NotImplemented, CallsLeaveTheCommunicatorUsable) {
  for (const Entry& e : entries()) e.call(comm_);
  ASSERT_EQ(ncclAllReduce(send_, recv_, 8, ncclFloat32, ncclMax, comm_, nullptr), ncclSuccess)
      << ncclGetLastError(comm_);
  for (int i = 0; i < 8; i++) EXPECT_EQ(recv_[i], send_[i]);
}

}  // namespace
}  // namespace braid::badinput
