// The NCCL-API library and the CUDA runtime, opened with dlopen and called through dlsym'd
// pointers. The worker links neither: the same binary then drives NVIDIA's libnccl.so.2 or
// Braid's (Braid's include/nccl.h is ABI-identical, so its declarations type the pointers), and
// it builds and runs where CUDA is absent.
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"

namespace braid::validate_nccl {

struct NcclApi {
  void* handle = nullptr;
  std::string path;
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclGetLastError) getLastError = nullptr;
  decltype(&ncclCommInitAll) commInitAll = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
  decltype(&ncclRedOpCreatePreMulSum) redOpCreatePreMulSum = nullptr;
  decltype(&ncclRedOpDestroy) redOpDestroy = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclReduce) reduce = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  // NCCL 2.28's own alltoall, gather and scatter; null where the library predates them.
  decltype(&ncclAlltoAll) alltoAll = nullptr;
  decltype(&ncclGather) gather = nullptr;
  decltype(&ncclScatter) scatter = nullptr;
};

/// Opens path (RTLD_LOCAL: nothing it exports can bind to another library) and resolves every
/// function; false with the reason in *error when the library or a required symbol is missing.
bool loadNccl(const std::string& path, NcclApi* api, std::string* error);

/// The few CUDA runtime calls the worker makes, with the runtime's ABI: cudaError_t is an int
/// enum, cudaMemcpyKind an int, cudaStream_t an opaque pointer (as nccl.h declares it).
struct CudaRuntime {
  void* handle = nullptr;
  std::string path;
  int (*getDeviceCount)(int*) = nullptr;
  int (*setDevice)(int) = nullptr;
  int (*malloc)(void**, std::size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, std::size_t, int) = nullptr;
  int (*streamCreate)(cudaStream_t*) = nullptr;
  int (*streamSynchronize)(cudaStream_t) = nullptr;
  int (*streamDestroy)(cudaStream_t) = nullptr;
  const char* (*getErrorString)(int) = nullptr;
  const char* (*getErrorName)(int) = nullptr;
};
inline constexpr int kCudaMemcpyHostToDevice = 1;
inline constexpr int kCudaMemcpyDeviceToHost = 2;

/// Opens path, or when it is empty the first of libcudart.so.13, .so.12 and .so on the loader's
/// path and then under /usr/local/cuda/lib64.
bool loadCudaRuntime(const std::string& path, CudaRuntime* rt, std::string* error);

/// "35 cudaErrorInsufficientDriver (CUDA driver version is insufficient ...)".
std::string describeCudaError(const CudaRuntime& rt, int code);

}  // namespace braid::validate_nccl
