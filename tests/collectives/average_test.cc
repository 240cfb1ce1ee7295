// ncclAvg as NCCL defines it, on 8 ranks as threads: floating types premultiply every rank's
// input by 1/nranks rounded to the type and sum the rounded products, so an fp16 or bf16 average
// of values whose plain sum overflows the type (to inf) is finite and exact; integer types sum
// and divide, truncating toward zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "braid/braid.h"
#include "harness/rank_harness.h"
#include "verifiable/element_codec.h"

namespace {

using braid::test::RankContext;
constexpr int kRanks = 8;
constexpr size_t kCount = 1031;  // several vector widths and a tail

braid::test::RunOptions options() {
  braid::test::RunOptions o;
  o.timeoutS = 120;
  return o;
}

// Rank r's element i: near a quarter of the type's largest value, so that the sum of 8 ranks
// overflows. Each value divided by 8 is a multiple of a power of two that keeps every partial
// sum of the eighths exact (fp16: multiples of 8 below 2^14; bf16: 2^120 times integers below
// 2^8), so the expected average is exact in any reduction order.
double input(ncclDataType_t type, int r, size_t i) {
  const int k = static_cast<int>((static_cast<size_t>(r) + i) % kRanks);
  if (type == ncclFloat16) return 16000.0 + 64.0 * k;  // 16000 .. 16448 (max 65504)
  return std::ldexp(1.0 + k / 8.0, 126);               // bf16 max is about 1.7 * 2^127
}

double exactAverage(ncclDataType_t type, size_t i) {
  double sum = 0;
  for (int r = 0; r < kRanks; r++) sum += input(type, r, i) / kRanks;  // 1/8 is exact
  return sum;
}

void checkNarrowAverage(RankContext& ctx, ncclComm_t comm, ncclDataType_t type, const char* name) {
  const int me = ctx.rank();
  std::vector<uint16_t> in(kCount), out(kCount, 0xFFFF), sum(kCount, 0xFFFF);
  for (size_t i = 0; i < kCount; i++)
    braid::verifiable::storeElement(in.data(), i, type, input(type, me, i));
  if (ncclAllReduce(in.data(), sum.data(), kCount, type, ncclSum, comm, nullptr) != ncclSuccess)
    return ctx.fail(std::string(name) + " sum: " + ncclGetLastError(comm));
  if (ncclAllReduce(in.data(), out.data(), kCount, type, ncclAvg, comm, nullptr) != ncclSuccess)
    return ctx.fail(std::string(name) + " avg: " + ncclGetLastError(comm));
  for (size_t i = 0; i < kCount; i++) {
    // The plain sum leaves the type: sum-then-divide could not give the average.
    const double total = braid::verifiable::loadElement(sum.data(), i, type);
    if (!std::isinf(total))
      return ctx.fail(std::string(name) + " sum element " + std::to_string(i) + " is " +
                      std::to_string(total) + ", expected inf");
    const double got = braid::verifiable::loadElement(out.data(), i, type);
    const double want = exactAverage(type, i);
    if (got != want)
      return ctx.fail(std::string(name) + " avg element " + std::to_string(i) + " is " +
                      std::to_string(got) + ", expected " + std::to_string(want));
  }
  // ncclReduce and ncclReduceScatter take the same op.
  std::vector<uint16_t> rooted(kCount, 0xFFFF);
  if (ncclReduce(in.data(), rooted.data(), kCount, type, ncclAvg, kRanks - 1, comm, nullptr) !=
      ncclSuccess)
    return ctx.fail(std::string(name) + " reduce avg: " + ncclGetLastError(comm));
  if (me == kRanks - 1)
    for (size_t i = 0; i < kCount; i++)
      if (braid::verifiable::loadElement(rooted.data(), i, type) != exactAverage(type, i))
        return ctx.fail(std::string(name) + " reduce avg element " + std::to_string(i));
  const size_t block = kCount / kRanks;
  std::vector<uint16_t> part(block, 0xFFFF);
  if (ncclReduceScatter(in.data(), part.data(), block, type, ncclAvg, comm, nullptr) != ncclSuccess)
    return ctx.fail(std::string(name) + " reduce-scatter avg: " + ncclGetLastError(comm));
  for (size_t i = 0; i < block; i++)
    if (braid::verifiable::loadElement(part.data(), i, type) != exactAverage(type, me * block + i))
      return ctx.fail(std::string(name) + " reduce-scatter avg element " + std::to_string(i));
}

TEST(Average, HalfAndBfloat16AveragesOfOverflowingSumsAreFinite) {
  auto report = braid::test::runThreads(
      kRanks,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        checkNarrowAverage(ctx, comm, ncclFloat16, "fp16");
        checkNarrowAverage(ctx, comm, ncclBfloat16, "bf16");
        ncclCommDestroy(comm);
      },
      options());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

// Integer averages divide the (wrapped) sum by nranks and truncate toward zero, negative
// quotients included: -93 / 8 is -11, not -12; 28 / 8 is 3.
template <typename T>
void checkIntegerAverage(RankContext& ctx, ncclComm_t comm, ncclDataType_t type, const char* name) {
  const int me = ctx.rank();
  const std::vector<T> in = {static_cast<T>(me == 0 ? -100 : 1), static_cast<T>(me),
                             static_cast<T>(-me), static_cast<T>(me == 3 ? 15 : 0)};
  const std::vector<T> want = {static_cast<T>(-11), static_cast<T>(3), static_cast<T>(-3),
                               static_cast<T>(1)};
  std::vector<T> out(in.size(), static_cast<T>(99));
  if (ncclAllReduce(in.data(), out.data(), in.size(), type, ncclAvg, comm, nullptr) != ncclSuccess)
    return ctx.fail(std::string(name) + " avg: " + ncclGetLastError(comm));
  for (size_t i = 0; i < in.size(); i++)
    if (out[i] != want[i])
      return ctx.fail(std::string(name) + " avg element " + std::to_string(i) + " is " +
                      std::to_string(static_cast<long long>(out[i])) + ", expected " +
                      std::to_string(static_cast<long long>(want[i])));
}

TEST(Average, IntegerAveragesTruncateTowardZero) {
  auto report = braid::test::runThreads(
      kRanks,
      [](RankContext& ctx) {
        ncclComm_t comm = ctx.initComm();
        if (!comm) return;
        checkIntegerAverage<int8_t>(ctx, comm, ncclInt8, "int8");
        checkIntegerAverage<int32_t>(ctx, comm, ncclInt32, "int32");
        checkIntegerAverage<int64_t>(ctx, comm, ncclInt64, "int64");
        ncclCommDestroy(comm);
      },
      options());
  BRAID_EXPECT_ALL_RANKS_OK(report);
}

}  // namespace
