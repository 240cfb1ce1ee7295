#include "loader.h"

#include <dlfcn.h>

#include <vector>

namespace braid::validate_nccl {
namespace {

// dlsym into a typed pointer; records the first missing name.
template <typename Fn>
void resolve(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!*out && missing->empty()) *missing = name;
}

std::string lastDlError() {
  const char* text = dlerror();
  return text ? text : "unknown dlopen error";
}

}  // namespace

bool loadNccl(const std::string& path, NcclApi* api, std::string* error) {
  // RTLD_LOCAL: the library's ncclXxx stay out of the global scope, so nothing loaded after it
  // (NVIDIA's plugins, a second NCCL) can bind to them by accident.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    *error = "dlopen " + path + ": " + lastDlError();
    return false;
  }
  api->handle = handle;
  api->path = path;
  std::string missing;
  resolve(handle, "ncclGetVersion", &api->getVersion, &missing);
  resolve(handle, "ncclGetErrorString", &api->getErrorString, &missing);
  resolve(handle, "ncclGetLastError", &api->getLastError, &missing);
  resolve(handle, "ncclCommInitAll", &api->commInitAll, &missing);
  resolve(handle, "ncclCommDestroy", &api->commDestroy, &missing);
  resolve(handle, "ncclGroupStart", &api->groupStart, &missing);
  resolve(handle, "ncclGroupEnd", &api->groupEnd, &missing);
  resolve(handle, "ncclRedOpCreatePreMulSum", &api->redOpCreatePreMulSum, &missing);
  resolve(handle, "ncclRedOpDestroy", &api->redOpDestroy, &missing);
  resolve(handle, "ncclAllReduce", &api->allReduce, &missing);
  resolve(handle, "ncclReduce", &api->reduce, &missing);
  resolve(handle, "ncclReduceScatter", &api->reduceScatter, &missing);
  resolve(handle, "ncclBroadcast", &api->broadcast, &missing);
  resolve(handle, "ncclAllGather", &api->allGather, &missing);
  resolve(handle, "ncclSend", &api->send, &missing);
  resolve(handle, "ncclRecv", &api->recv, &missing);
  if (!missing.empty()) {
    *error = path + " does not export " + missing;
    return false;
  }
  // Optional: their cases are left out (and the comparer says so) where they are absent.
  std::string optional;
  resolve(handle, "ncclAlltoAll", &api->alltoAll, &optional);
  resolve(handle, "ncclGather", &api->gather, &optional);
  resolve(handle, "ncclScatter", &api->scatter, &optional);
  return true;
}

bool loadCudaRuntime(const std::string& path, CudaRuntime* rt, std::string* error) {
  std::vector<std::string> candidates;
  if (!path.empty()) {
    candidates.push_back(path);
  } else {
    for (const char* name : {"libcudart.so.13", "libcudart.so.12", "libcudart.so"}) {
      candidates.push_back(name);
      candidates.push_back(std::string("/usr/local/cuda/lib64/") + name);
    }
  }
  void* handle = nullptr;
  std::string reasons;
  for (const std::string& candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      rt->path = candidate;
      break;
    }
    if (reasons.empty()) reasons = lastDlError();
  }
  if (!handle) {
    *error = "no CUDA runtime could be opened (" + reasons + ")";
    return false;
  }
  rt->handle = handle;
  std::string missing;
  resolve(handle, "cudaGetDeviceCount", &rt->getDeviceCount, &missing);
  resolve(handle, "cudaSetDevice", &rt->setDevice, &missing);
  resolve(handle, "cudaMalloc", &rt->malloc, &missing);
  resolve(handle, "cudaFree", &rt->free, &missing);
  resolve(handle, "cudaMemcpy", &rt->memcpy, &missing);
  resolve(handle, "cudaStreamCreate", &rt->streamCreate, &missing);
  resolve(handle, "cudaStreamSynchronize", &rt->streamSynchronize, &missing);
  resolve(handle, "cudaStreamDestroy", &rt->streamDestroy, &missing);
  resolve(handle, "cudaGetErrorString", &rt->getErrorString, &missing);
  resolve(handle, "cudaGetErrorName", &rt->getErrorName, &missing);
  if (!missing.empty()) {
    *error = rt->path + " does not export " + missing;
    return false;
  }
  return true;
}

std::string describeCudaError(const CudaRuntime& rt, int code) {
  std::string text = std::to_string(code);
  if (rt.getErrorName) text += std::string(" ") + rt.getErrorName(code);
  if (rt.getErrorString) text += std::string(" (") + rt.getErrorString(code) + ")";
  return text;
}

}  // namespace braid::validate_nccl
