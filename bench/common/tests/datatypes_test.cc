// The name tables against nccl-tests' spellings.
#include "datatypes.h"

#include <gtest/gtest.h>

namespace braid::bench {
namespace {

TEST(DataTypes, NamesFollowNcclTests) {
  EXPECT_EQ(typeIndexFromName("int8"), ncclInt8);
  EXPECT_EQ(typeIndexFromName("half"), ncclFloat16);
  EXPECT_EQ(typeIndexFromName("float"), ncclFloat32);
  EXPECT_EQ(typeIndexFromName("bfloat16"), ncclBfloat16);
  EXPECT_EQ(typeIndexFromName("f8e4m3"), ncclFloat8e4m3);
  EXPECT_EQ(typeIndexFromName("f8e5m2"), ncclFloat8e5m2);
  EXPECT_EQ(typeIndexFromName("all"), -1);
  EXPECT_EQ(typeIndexFromName("fp32"), -2);
  EXPECT_EQ(opIndexFromName("sum"), ncclSum);
  EXPECT_EQ(opIndexFromName("prod"), ncclProd);
  EXPECT_EQ(opIndexFromName("max"), ncclMax);
  EXPECT_EQ(opIndexFromName("min"), ncclMin);
  EXPECT_EQ(opIndexFromName("avg"), ncclAvg);
  EXPECT_EQ(opIndexFromName("mulsum"), kOpMulSum);
  EXPECT_EQ(opIndexFromName("all"), -1);
  for (int t = 0; t < kNumTypes; ++t) EXPECT_EQ(static_cast<int>(kTypes[t].type), t);
}

}  // namespace
}  // namespace braid::bench
