#include <cuda_runtime.h>

#include "kernels/cuda/device_collective.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/device/collective.h"

namespace braid::kernels::cuda {
namespace {

static_assert(sizeof(device::LaunchArgs) <= 4000, "kernel parameters are limited to 4 KiB");

// One block per multiprocessor is all a channel needs (a launch's channels are its blocks), so
// the compiler may give a thread all the registers it wants: with the default target of two
// blocks per multiprocessor it capped them at 128 and spilled the schedules' state.
template <int D, class Op>
__global__ void __launch_bounds__(kCollectiveThreads, 1)
    collectiveKernel(const __grid_constant__ device::LaunchArgs launch, int* status) {
  __shared__ device::BlockShared shared;
  const device::Block block{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const int result = device::runLaunch<D, Op>(launch, static_cast<int>(blockIdx.x), block, &shared);
  if (threadIdx.x == 0 && status != nullptr) status[blockIdx.x] = result;
}

}  // namespace

int launchCollectives(const device::LaunchArgs& launch, int* status, void* stream,
                      const char** why) {
  *why = device::unsupported(launch);
  if (*why != nullptr) return -1;
  cudaError_t error = cudaSuccess;
  const ReduceOp& op = launch.items[0].op;
  const int threads =
      launch.threads >= 32 && launch.threads <= kCollectiveThreads && launch.threads % 32 == 0
          ? launch.threads
          : kCollectiveThreads;
  withDtypeAndOp(op.dtype, op.op, [&]<int D, class Op>() {
    collectiveKernel<D, Op>
        <<<launch.channels(), threads, 0, static_cast<cudaStream_t>(stream)>>>(launch, status);
    error = cudaGetLastError();
  });
  return static_cast<int>(error);
}

int residentKernelBlocks(int device, int* blocks) {
  int multiprocessors = 0;
  cudaError_t error =
      cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  int fewest = 1 << 30;
  for (int d = 0; d < dtype::kCount && error == cudaSuccess; ++d)
    for (int o = 0; o < 4 && error == cudaSuccess; ++o)
      withDtypeAndOp(d, static_cast<BaseOp>(o), [&]<int D, class Op>() {
        int perMultiprocessor = 0;
        error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &perMultiprocessor, collectiveKernel<D, Op>, kCollectiveThreads, 0);
        fewest = perMultiprocessor < fewest ? perMultiprocessor : fewest;
      });
  int p2p = 0;
  if (error == cudaSuccess)
    error = static_cast<cudaError_t>(p2pResidentBlocksPerMultiprocessor(&p2p));
  fewest = p2p < fewest ? p2p : fewest;
  *blocks = error == cudaSuccess ? fewest * multiprocessors : 0;
  return static_cast<int>(error);
}

int launchCollective(const device::CollectiveArgs& args, int* status, void* stream,
                     const char** why) {
  device::LaunchArgs launch;
  launch.count = 1;
  launch.items[0] = args;
  return launchCollectives(launch, status, stream, why);
}

}  // namespace braid::kernels::cuda
