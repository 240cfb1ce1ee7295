// The CUDA reduce and copy kernels on a device, against the independent reference over every
// dtype x op x layout (reduce_cases.h: aliasing, misalignment, guards, odd counts), and against
// the CPU kernels at sizes that span many blocks. Every test skips, saying why, where
// cudaGetDeviceCount reports no device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/reduce_cuda.h"
#include "kernels/reduce.h"
#include "tests/kernels/cuda_device.h"
#include "tests/kernels/reduce_cases.h"
#include "tests/kernels/reference.h"

namespace braid::kernels::testing {
namespace {

#define CUDA_ASSERT(call)                                                  \
  do {                                                                     \
    const cudaError_t e_ = (call);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)

/// Device copies of the host test buffers, guards included, at the same offset within 256
/// bytes (so the kernel sees the alignment the test chose). Copies back on sync().
class DeviceMirror {
 public:
  DeviceMirror(std::size_t elementSize, std::size_t count)
      : elementSize_(elementSize), bytes_((count + 2 * kGuardElements) * elementSize) {}
  ~DeviceMirror() {
    for (const Entry& e : entries_) cudaFree(e.allocation);
  }
  void* map(const void* host) {
    if (host == nullptr) return nullptr;
    for (const Entry& e : entries_) {
      if (e.host == host) return e.device;
    }
    auto* region =
        static_cast<unsigned char*>(const_cast<void*>(host)) - kGuardElements * elementSize_;
    void* allocation = nullptr;
    if (cudaMalloc(&allocation, bytes_ + 256) != cudaSuccess) return nullptr;
    auto* deviceRegion =
        static_cast<unsigned char*>(allocation) + reinterpret_cast<std::uintptr_t>(region) % 256;
    cudaMemcpy(deviceRegion, region, bytes_, cudaMemcpyHostToDevice);
    void* device = deviceRegion + kGuardElements * elementSize_;
    entries_.push_back({host, region, allocation, deviceRegion, device});
    return device;
  }
  std::string sync() {
    const cudaError_t error = cudaDeviceSynchronize();
    if (error != cudaSuccess) return std::string("kernel: ") + cudaGetErrorString(error);
    for (const Entry& e : entries_)
      cudaMemcpy(e.region, e.deviceRegion, bytes_, cudaMemcpyDeviceToHost);
    return {};
  }

 private:
  struct Entry {
    const void* host;
    unsigned char* region;
    void* allocation;
    unsigned char* deviceRegion;
    void* device;
  };
  std::size_t elementSize_;
  std::size_t bytes_;
  std::vector<Entry> entries_;
};

/// kernels::reduce's signature, run by the CUDA kernel on mirrored buffers.
void reduceOnDevice(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                    std::size_t count, unsigned flags) {
  DeviceMirror mirror(typeSize(op.dtype), count);
  // Map local first, so an out0 aliasing it maps to the same device buffer.
  const void* dLocal = mirror.map(local);
  const void* dAcc = mirror.map(acc);
  void* dOut0 = mirror.map(out0);
  void* dOut1 = mirror.map(out1);
  const int error = cuda::reduceAsync(op, dOut0, dOut1, dAcc, dLocal, count, flags, nullptr);
  ASSERT_EQ(error, 0) << cudaGetErrorString(static_cast<cudaError_t>(error));
  ASSERT_EQ(mirror.sync(), "");
}

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = noCudaDeviceReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

class CudaReduceTest : public ::testing::TestWithParam<std::tuple<int, OpKind>> {
 protected:
  void SetUp() override {
    const std::string reason = noCudaDeviceReason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
};

TEST_P(CudaReduceTest, MatchesReferenceOverEveryLayout) {
  const auto [dtype, kind] = GetParam();
  const std::vector<std::size_t> counts(std::begin(kCounts), std::end(kCounts));
  EXPECT_EQ(
      checkAllLayouts(reduceOnDevice, dtype, kind, 31u * dtype + static_cast<int>(kind), counts),
      "");
}

/// Counts that span every block of the grid and the unrolled body, head and tail included.
TEST_P(CudaReduceTest, MatchesCpuKernelsAtLargeCounts) {
  const auto [dtype, kind] = GetParam();
  std::mt19937_64 rng(977u * dtype + static_cast<unsigned>(kind));
  const std::size_t size = typeSize(dtype);
  for (const std::size_t count : {std::size_t{1} << 20, (std::size_t{1} << 22) + 3}) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      const ReduceOp op = makeOp(dtype, kind, rng);
      const unsigned flags = kApplyPre | kApplyPost;
      std::vector<unsigned char> acc((count + offset) * size), local(acc.size());
      for (auto& byte : acc) byte = static_cast<unsigned char>(rng());
      for (auto& byte : local) byte = static_cast<unsigned char>(rng());
      std::vector<unsigned char> expected(acc.size()), got(acc.size(), 0xEE);
      reduce(op, expected.data() + offset * size, nullptr, acc.data() + offset * size,
             local.data() + offset * size, count, flags);
      unsigned char *dAcc, *dLocal, *dOut;
      CUDA_ASSERT(cudaMalloc(&dAcc, acc.size()));
      CUDA_ASSERT(cudaMalloc(&dLocal, acc.size()));
      CUDA_ASSERT(cudaMalloc(&dOut, acc.size()));
      CUDA_ASSERT(cudaMemcpy(dAcc, acc.data(), acc.size(), cudaMemcpyHostToDevice));
      CUDA_ASSERT(cudaMemcpy(dLocal, local.data(), acc.size(), cudaMemcpyHostToDevice));
      ASSERT_EQ(cuda::reduceAsync(op, dOut + offset * size, nullptr, dAcc + offset * size,
                                  dLocal + offset * size, count, flags, nullptr),
                0);
      CUDA_ASSERT(cudaMemcpy(got.data(), dOut, got.size(), cudaMemcpyDeviceToHost));
      cudaFree(dAcc);
      cudaFree(dLocal);
      cudaFree(dOut);
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t at = i + offset;
        ASSERT_TRUE(sameResult(dtype, loadElement(dtype, expected.data(), at),
                               loadElement(dtype, got.data(), at)))
            << "element " << i << " of " << count << ", offset " << offset;
      }
    }
  }
}

std::string paramName(const ::testing::TestParamInfo<std::tuple<int, OpKind>>& info) {
  const auto [dtype, kind] = info.param;
  return std::string(dtypeName(dtype)) + "_" + opName(kind);
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, CudaReduceTest,
                         ::testing::Combine(::testing::Range(0, kDtypeCount),
                                            ::testing::ValuesIn(kAllOps)),
                         paramName);

TEST_F(CudaDeviceTest, CopyWritesBothOutputsAtEveryOffset) {
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{17},
                                  std::size_t{4099}, (std::size_t{1} << 24) + 5}) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{3}}) {
      std::vector<unsigned char> src(bytes + 16);
      for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 131 + 7);
      unsigned char *dSrc, *dOut0, *dOut1;
      CUDA_ASSERT(cudaMalloc(&dSrc, src.size()));
      CUDA_ASSERT(cudaMalloc(&dOut0, src.size()));
      CUDA_ASSERT(cudaMalloc(&dOut1, src.size()));
      CUDA_ASSERT(cudaMemcpy(dSrc, src.data(), src.size(), cudaMemcpyHostToDevice));
      CUDA_ASSERT(cudaMemset(dOut0, 0xEE, src.size()));
      CUDA_ASSERT(cudaMemset(dOut1, 0xEE, src.size()));
      ASSERT_EQ(cuda::copyAsync(dOut0 + offset, dOut1 + offset, dSrc + offset, bytes, nullptr), 0);
      std::vector<unsigned char> out0(src.size()), out1(src.size());
      CUDA_ASSERT(cudaMemcpy(out0.data(), dOut0, src.size(), cudaMemcpyDeviceToHost));
      CUDA_ASSERT(cudaMemcpy(out1.data(), dOut1, src.size(), cudaMemcpyDeviceToHost));
      cudaFree(dSrc);
      cudaFree(dOut0);
      cudaFree(dOut1);
      for (std::size_t i = 0; i < src.size(); ++i) {
        const bool inside = i >= offset && i < offset + bytes;
        ASSERT_EQ(out0[i], inside ? src[i] : 0xEE) << "out0 byte " << i << " of " << bytes;
        ASSERT_EQ(out1[i], inside ? src[i] : 0xEE) << "out1 byte " << i << " of " << bytes;
      }
    }
  }
}

/// Runs everywhere: an invalid dtype or op is refused before anything is launched.
TEST(CudaHost, InvalidDtypeOrOpIsRejectedWithoutLaunching) {
  ReduceOp op;
  op.dtype = 12;
  EXPECT_EQ(cuda::reduceAsync(op, nullptr, nullptr, nullptr, nullptr, 1, 0, nullptr),
            static_cast<int>(cudaErrorInvalidValue));
  op.dtype = 7;
  op.op = static_cast<BaseOp>(4);
  EXPECT_EQ(cuda::reduceAsync(op, nullptr, nullptr, nullptr, nullptr, 1, 0, nullptr),
            static_cast<int>(cudaErrorInvalidValue));
}

/// Runs everywhere: the skip reason is empty exactly when a device is usable, and otherwise
/// names the runtime call and its answer.
TEST(CudaAvailability, SkipReasonNamesTheRuntimeAnswer) {
  const std::string reason = noCudaDeviceReason();
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (reason.empty()) {
    EXPECT_EQ(error, cudaSuccess);
    EXPECT_GT(count, 0);
  } else {
    EXPECT_EQ(reason.rfind("no CUDA device: cuda", 0), 0u) << reason;
    if (error != cudaSuccess) EXPECT_NE(reason.find(cudaGetErrorName(error)), std::string::npos);
    std::printf("skip reason on this machine: %s\n", reason.c_str());
  }
}

}  // namespace
}  // namespace braid::kernels::testing
