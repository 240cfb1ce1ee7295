// The tuner file (BRAID_TUNER_FILE): per-transport constants of the cost model, parsed strictly.
#include "tuner/cost_model.h"

#include <gtest/gtest.h>

namespace braid {
namespace {

TEST(TunerFile, SetsOnlyTheTransportsItNames) {
  LinkCosts c;
  c.local = {1, 2, 3};
  c.shm = {4, 5, 6};
  c.tcp = {7, 8, 9};
  std::string error;
  ASSERT_TRUE(parseLinkCosts("# measured\nshm alpha_us=1.5 gbps=6.25\n\nTCP reduce_gbps=12 # x\n",
                             &c, &error))
      << error;
  EXPECT_EQ(c.local.alphaUs, 1);
  EXPECT_EQ(c.shm.alphaUs, 1.5);
  EXPECT_EQ(c.shm.gbps, 6.25);
  EXPECT_EQ(c.shm.reduceGbps, 6);
  EXPECT_EQ(c.tcp.alphaUs, 7);
  EXPECT_EQ(c.tcp.reduceGbps, 12);
}

TEST(TunerFile, MalformedLinesAreNamed) {
  const char* bad[][2] = {{"nvlink alpha_us=1", "line 1: unknown transport 'nvlink'"},
                          {"shm\nshm alpha=1", "line 2: unknown key 'alpha'"},
                          {"shm gbps=-1", "'gbps=-1' is not key=positive number"},
                          {"shm gbps=1x", "'gbps=1x' is not key=positive number"},
                          {"tcp alpha_us", "'alpha_us' is not key=positive number"},
                          {"tcp gbps=nan", "'gbps=nan' is not key=positive number"}};
  for (auto& [text, message] : bad) {
    LinkCosts c;
    std::string error;
    EXPECT_FALSE(parseLinkCosts(text, &c, &error)) << text;
    EXPECT_NE(error.find(message), std::string::npos) << text << " -> " << error;
  }
}

}  // namespace
}  // namespace braid
