#include <cuda_runtime.h>

#include "kernels/cuda/device_collective.h"
#include "kernels/cuda/dispatch.h"
#include "kernels/device/collective.h"

namespace braid::kernels::cuda {
namespace {

template <int D, class Op>
__global__ void __launch_bounds__(kCollectiveThreads)
    collectiveKernel(device::CollectiveArgs args, int* status) {
  __shared__ device::BlockShared shared;
  const device::Block block{static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
  const int result = device::runChannel<D, Op>(args, static_cast<int>(blockIdx.x), block, &shared);
  if (threadIdx.x == 0 && status != nullptr) status[blockIdx.x] = result;
}

}  // namespace

int launchCollective(const device::CollectiveArgs& args, int* status, void* stream,
                     const char** why) {
  *why = device::unsupported(args);
  if (*why != nullptr) return -1;
  cudaError_t error = cudaSuccess;
  withDtypeAndOp(args.op.dtype, args.op.op, [&]<int D, class Op>() {
    collectiveKernel<D, Op>
        <<<args.comm.channels, kCollectiveThreads, 0, static_cast<cudaStream_t>(stream)>>>(args,
                                                                                           status);
    error = cudaGetLastError();
  });
  return static_cast<int>(error);
}

}  // namespace braid::kernels::cuda
