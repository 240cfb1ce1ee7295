#include <cuda_runtime.h>

#include "kernels/cuda/device_collective.h"
#include "kernels/device/p2p.h"

namespace braid::kernels::cuda {
namespace {

static_assert(sizeof(device::P2pLaunchArgs) <= 32764,
              "kernel parameters are limited to 32764 bytes (CUDA 12.1 and later)");

__global__ void __launch_bounds__(kCollectiveThreads)
    p2pKernel(const __grid_constant__ device::P2pLaunchArgs launch, int* status, int statusWords) {
  __shared__ device::BlockShared shared;
  const device::Block block{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const int result = device::runP2pBlock(launch, static_cast<int>(blockIdx.x), block, &shared);
  // More blocks than status words: a block reports only what went wrong, on its word.
  if (threadIdx.x == 0 && status != nullptr && result != device::kChannelOk)
    status[blockIdx.x % statusWords] = result;
}

}  // namespace

int p2pResidentBlocksPerMultiprocessor(int* blocks) {
  return static_cast<int>(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, p2pKernel, kCollectiveThreads, 0));
}

int launchSendRecv(const device::P2pLaunchArgs& launch, int* status, int statusWords, void* stream,
                   const char** why) {
  *why = device::unsupported(launch);
  if (*why == nullptr && statusWords < 1) *why = "no status word";
  if (*why != nullptr) return -1;
  p2pKernel<<<launch.blocks(), kCollectiveThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      launch, status, statusWords);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace braid::kernels::cuda
