// The collective kernels' schedule choice (tuner/device_schedule.h): latency-bound sizes take
// LL and the one-shot, bandwidth-bound sizes the ring under Simple on more channels, and
// NCCL_ALGO / NCCL_PROTO are obeyed.
#include <gtest/gtest.h>

#include "tuner/device_schedule.h"
#include "tuner/tuner.h"

namespace braid {
namespace {

using kernels::device::Protocol;
using DeviceAlgorithm = kernels::device::Algorithm;

TEST(DeviceSchedule, SmallCallsTakeLatencyAndLargeOnesBandwidth) {
  const DeviceSchedule small = chooseDeviceSchedule(CollType::kAllReduce, 8, 2, 8, "", "");
  EXPECT_EQ(small.protocol, Protocol::kLL);
  EXPECT_EQ(small.algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(small.channels, 1);
  const DeviceSchedule large =
      chooseDeviceSchedule(CollType::kAllReduce, size_t{256} << 20, 4, 8, "", "");
  EXPECT_EQ(large.protocol, Protocol::kSimple);
  EXPECT_EQ(large.algorithm, DeviceAlgorithm::kRing);
  EXPECT_EQ(large.channels, 8);
  EXPECT_LT(small.estimateUs, large.estimateUs);
}

// As NCCL: LL for the smallest calls, LL128 for the middle sizes, Simple for the largest.
TEST(DeviceSchedule, MiddleSizesTakeLL128) {
  const DeviceSchedule middle =
      chooseDeviceSchedule(CollType::kAllReduce, size_t{1} << 20, 4, 8, "", "");
  EXPECT_EQ(middle.protocol, Protocol::kLL128);
  EXPECT_EQ(middle.algorithm, DeviceAlgorithm::kRing);
  EXPECT_EQ(chooseDeviceSchedule(CollType::kAllGather, size_t{1} << 20, 4, 8, "", "").protocol,
            Protocol::kLL128);
}

// The one tuner chooses for the kernels too, from the device constants of its model (the tuner
// file's device line, rank 0's for every rank).
TEST(DeviceSchedule, TheTunerChoosesFromItsModelsDeviceConstants) {
  Tuner tuner;
  CommCostModel model;
  CommConfig config;
  tuner.configure(model, config, 4);
  EXPECT_EQ(tuner.chooseDevice(CollType::kAllReduce, size_t{1} << 20, 8).protocol,
            Protocol::kLL128);
  model.device.ll128Efficiency = 0.01;  // an LL128 that hardly moves data
  tuner.configure(model, config, 4);
  EXPECT_EQ(tuner.chooseDevice(CollType::kAllReduce, size_t{1} << 20, 8).protocol,
            Protocol::kSimple);
  config.proto = "LL";
  tuner.configure(model, config, 4);
  EXPECT_EQ(tuner.chooseDevice(CollType::kAllReduce, size_t{1} << 20, 8).protocol, Protocol::kLL);
}

TEST(DeviceSchedule, OnlyAllReduceHasTreeAndOneShot) {
  for (CollType c :
       {CollType::kBroadcast, CollType::kReduce, CollType::kAllGather, CollType::kReduceScatter})
    for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{1} << 28})
      EXPECT_EQ(chooseDeviceSchedule(c, bytes, 5, 8, "", "").algorithm, DeviceAlgorithm::kRing);
  // One-shot stops at 16 ranks.
  EXPECT_NE(chooseDeviceSchedule(CollType::kAllReduce, 8, 17, 8, "", "").algorithm,
            DeviceAlgorithm::kOneShot);
}

TEST(DeviceSchedule, NcclAlgoAndProtoAreObeyed) {
  const DeviceSchedule tree =
      chooseDeviceSchedule(CollType::kAllReduce, size_t{64} << 20, 4, 8, "Tree", "LL");
  EXPECT_EQ(tree.algorithm, DeviceAlgorithm::kTree);
  EXPECT_EQ(tree.protocol, Protocol::kLL);
  const DeviceSchedule notOneShot =
      chooseDeviceSchedule(CollType::kAllReduce, 8, 4, 8, "^oneshot", "simple");
  EXPECT_NE(notOneShot.algorithm, DeviceAlgorithm::kOneShot);
  EXPECT_EQ(notOneShot.protocol, Protocol::kSimple);
  const DeviceSchedule ll128 = chooseDeviceSchedule(CollType::kAllReduce, 8, 4, 8, "", "LL128");
  EXPECT_EQ(ll128.protocol, Protocol::kLL128);
  // Nothing allowed: ring under Simple.
  const DeviceSchedule fallback =
      chooseDeviceSchedule(CollType::kAllReduce, 8, 4, 8, "", "^Simple,LL,LL128");
  EXPECT_EQ(fallback.algorithm, DeviceAlgorithm::kRing);
  EXPECT_EQ(fallback.protocol, Protocol::kSimple);
}

// A block runs as many threads as one pass of the data loops over its share needs (64 bytes a
// thread), from 2 warps to 256 threads.
TEST(DeviceSchedule, ThreadsGrowWithTheChannelsShare) {
  EXPECT_EQ(chooseDeviceSchedule(CollType::kAllReduce, 8, 2, 8, "", "").threads, 64);
  EXPECT_EQ(chooseDeviceSchedule(CollType::kAllReduce, 8192, 2, 8, "", "").threads, 128);
  EXPECT_EQ(chooseDeviceSchedule(CollType::kAllReduce, size_t{1} << 28, 2, 8, "", "").threads, 256);
  int last = 0;
  for (size_t bytes = 1; bytes <= (size_t{1} << 30); bytes *= 2) {
    const DeviceSchedule s = chooseDeviceSchedule(CollType::kReduceScatter, bytes, 4, 8, "", "");
    EXPECT_EQ(s.threads % 32, 0);
    EXPECT_GE(s.threads, last) << bytes;
    last = s.threads;
  }
}

TEST(DeviceSchedule, ChannelsGrowWithSizeUpToTheLimit) {
  int last = 0;
  for (size_t bytes = 1; bytes <= (size_t{1} << 30); bytes *= 4) {
    const int c = chooseDeviceSchedule(CollType::kAllGather, bytes, 3, 6, "", "").channels;
    EXPECT_GE(c, last);
    EXPECT_LE(c, 6);
    last = c;
  }
  EXPECT_EQ(last, 6);
}

}  // namespace
}  // namespace braid
