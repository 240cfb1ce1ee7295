// Whether a CUDA device can run the device tests, and why not: the one skip rule every CUDA
// test and benchmark uses, so a machine without a GPU says so in the same words everywhere.
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace braid::kernels::testing {

/// Empty when device 0 is usable; otherwise "no CUDA device: <what the runtime said>".
inline std::string noCudaDeviceReason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return std::string("no CUDA device: cudaGetDeviceCount returned ") + cudaGetErrorName(error) +
           " (" + cudaGetErrorString(error) + ")";
  }
  if (count == 0) return "no CUDA device: cudaGetDeviceCount reports 0 devices";
  const cudaError_t set = cudaSetDevice(0);
  if (set != cudaSuccess) {
    return std::string("no CUDA device: cudaSetDevice(0) returned ") + cudaGetErrorName(set);
  }
  return {};
}

}  // namespace braid::kernels::testing
