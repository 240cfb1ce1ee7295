// What the CUDA runtime's calls share (cuda_device_runtime.cu): errors as ncclResult_t with the
// call named, a scope that makes a device current and restores the caller's, and the capture
// mode of the library's own threads. CUDA builds only.
#pragma once

#include <cuda_runtime.h>

#include "nccl.h"
#include "util/status.h"

namespace braid {

inline ncclResult_t cudaFail(cudaError_t error, const char* call) {
  cudaGetLastError();  // clear a non-sticky error so later calls do not see it
  return fail(ncclUnhandledCudaError, "%s failed: %s (%s)", call, cudaGetErrorName(error),
              cudaGetErrorString(error));
}

#define BRAID_CUDA_TRY(call)                                                     \
  do {                                                                           \
    const cudaError_t braidCudaError_ = (call);                                  \
    if (braidCudaError_ != cudaSuccess) return cudaFail(braidCudaError_, #call); \
  } while (0)

/// Whether the calling thread has a CUDA context current (through the driver's cuCtxGetCurrent,
/// which, unlike cudaGetDevice, tells a thread that never chose a device from one that chose 0).
inline bool threadHasContext() {
  using GetCurrent = int (*)(void**);
  static GetCurrent const getCurrent = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<GetCurrent>(nullptr);
    }
    return reinterpret_cast<GetCurrent>(fn);
  }();
  void* context = nullptr;
  if (getCurrent == nullptr) return true;  // unknown: restore, as before
  return getCurrent(&context) == 0 && context != nullptr;
}

/// Makes a device current for a scope and then restores the caller's: the runtime must not
/// change the device a user's thread has current. A thread with no context yet (a fresh thread
/// reports device 0 without having chosen it) keeps the scope's device: restoring "0" would
/// create a context on device 0, which exclusive-process mode refuses and which costs memory.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    const bool hadContext = threadHasContext();
    if (!hadContext || cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      previous_ = -1;
    }
    if (previous_ != device) error_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_)
      cudaSetDevice(previous_);
  }
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  cudaError_t error_ = cudaSuccess;
};

/// Library threads never call capture-unsafe APIs in a way that invalidates a user's capture:
/// under the global capture mode (PyTorch's default) a cudaMalloc or a synchronisation on any
/// thread ends another thread's capture, unless this thread relaxes its mode.
inline void relaxCaptureMode() {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
}

}  // namespace braid
