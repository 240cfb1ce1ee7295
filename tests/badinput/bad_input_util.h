// Helpers for the bad-input tests: a one-rank communicator to misuse, and an assertion that a
// call was refused with the expected code and a ncclGetLastError text naming what was wrong.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "nccl.h"

namespace braid::badinput {

/// Succeeds when `result` is `code` and the last-error text contains every fragment.
inline ::testing::AssertionResult refused(ncclResult_t result, ncclResult_t code,
                                          std::initializer_list<std::string> fragments,
                                          ncclComm_t comm = nullptr) {
  const std::string text = ncclGetLastError(comm);
  if (result != code)
    return ::testing::AssertionFailure()
           << "returned " << result << " (" << ncclGetErrorString(result) << "), expected " << code
           << "; last error: \"" << text << "\"";
  for (const std::string& f : fragments)
    if (text.find(f) == std::string::npos)
      return ::testing::AssertionFailure()
             << "last error \"" << text << "\" does not mention \"" << f << "\"";
  return ::testing::AssertionSuccess() << text;
}

/// A live one-rank communicator for the duration of a test.
class OneRankComm : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess) << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclCommInitRank(&comm_, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  }
  void TearDown() override {
    if (comm_) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess) << ncclGetLastError(nullptr);
    }
  }

  ncclComm_t comm_ = nullptr;
  float send_[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float recv_[8] = {};
};

}  // namespace braid::badinput
