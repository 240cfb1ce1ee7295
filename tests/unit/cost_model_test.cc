// The tuner file (BRAID_TUNER_FILE): per-transport constants of the cost model and the collective
// kernels' constants, parsed strictly.
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

// The collective kernels' constants sit beside the transports' in the same file, and what
// formatLinkCosts writes reads back to the same constants.
TEST(TunerFile, DeviceConstantsAreReadAndWrittenBesideTheTransports) {
  LinkCosts c = defaultLinkCosts();
  std::string error;
  ASSERT_TRUE(
      parseLinkCosts("device launch_us=9 ll128_efficiency=0.75 channel_bytes=65536\n", &c, &error))
      << error;
  EXPECT_EQ(c.device.launchUs, 9);
  EXPECT_EQ(c.device.ll128Efficiency, 0.75);
  EXPECT_EQ(c.device.bytesPerChannel, 65536);
  EXPECT_EQ(c.device.hopUsLL, defaultDeviceCosts().hopUsLL);  // not named: kept
  LinkCosts back;
  ASSERT_TRUE(parseLinkCosts(formatLinkCosts(c), &back, &error)) << error;
  EXPECT_EQ(back.device.launchUs, 9);
  EXPECT_EQ(back.device.ll128Efficiency, 0.75);
  EXPECT_EQ(back.device.bytesPerChannel, 65536);
  double figures[kDeviceCostFigures];
  deviceCostFigures(c.device, figures);
  EXPECT_EQ(deviceCostsFromFigures(figures).launchUs, 9);
  EXPECT_FALSE(parseLinkCosts("device hop_us=1", &c, &error));
  EXPECT_NE(error.find("unknown key 'hop_us'"), std::string::npos) << error;
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
