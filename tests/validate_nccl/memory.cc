#include "memory.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace braid::validate_nccl {
namespace {

class HostMemory : public Memory {
 public:
  bool isDevice() const override { return false; }
  void* allocate(int, std::size_t bytes) override {
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) throw std::runtime_error("out of host memory");
    return p;
  }
  void release(int, void* pointer) override { std::free(pointer); }
  void upload(int, void* device, const void* host, std::size_t bytes) override {
    if (bytes) std::memcpy(device, host, bytes);
  }
  void download(int, void* host, const void* device, std::size_t bytes) override {
    if (bytes) std::memcpy(host, device, bytes);
  }
  cudaStream_t stream(int) override { return nullptr; }
  void synchronize(int) override {}
};

class DeviceMemory : public Memory {
 public:
  explicit DeviceMemory(CudaRuntime rt) : rt_(rt) {}
  ~DeviceMemory() override {
    for (std::size_t r = 0; r < streams_.size(); ++r) {
      rt_.setDevice(static_cast<int>(r));
      rt_.streamDestroy(streams_[r]);
    }
  }

  // Creates rank r's stream on device r.
  int addRank(int rank) {
    cudaStream_t stream = nullptr;
    int status = rt_.setDevice(rank);
    if (status == 0) status = rt_.streamCreate(&stream);
    if (status == 0) streams_.push_back(stream);
    return status;
  }

  bool isDevice() const override { return true; }
  void* allocate(int rank, std::size_t bytes) override {
    void* p = nullptr;
    check(rt_.setDevice(rank), "cudaSetDevice");
    check(rt_.malloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(int rank, void* pointer) override {
    rt_.setDevice(rank);
    rt_.free(pointer);
  }
  void upload(int rank, void* device, const void* host, std::size_t bytes) override {
    if (!bytes) return;
    check(rt_.setDevice(rank), "cudaSetDevice");
    check(rt_.memcpy(device, host, bytes, kCudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void download(int rank, void* host, const void* device, std::size_t bytes) override {
    if (!bytes) return;
    check(rt_.setDevice(rank), "cudaSetDevice");
    check(rt_.memcpy(host, device, bytes, kCudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  cudaStream_t stream(int rank) override { return streams_.at(rank); }
  void synchronize(int rank) override {
    check(rt_.setDevice(rank), "cudaSetDevice");
    check(rt_.streamSynchronize(streams_.at(rank)), "cudaStreamSynchronize");
  }

 private:
  // CUDA errors are sticky for the context: the run cannot go on, so they end it.
  void check(int status, const char* what) {
    if (status != 0)
      throw std::runtime_error(std::string(what) + ": " + describeCudaError(rt_, status));
  }

  CudaRuntime rt_;
  std::vector<cudaStream_t> streams_;
};

}  // namespace

std::unique_ptr<Memory> makeHostMemory() {
  return std::make_unique<HostMemory>();
}

std::unique_ptr<Memory> makeDeviceMemory(const std::string& cudartPath, int nranks,
                                         std::string* whyNot) {
  CudaRuntime rt;
  if (!loadCudaRuntime(cudartPath, &rt, whyNot)) return nullptr;
  int devices = 0;
  int status = rt.getDeviceCount(&devices);
  if (status != 0) {
    *whyNot = "cudaGetDeviceCount returned " + describeCudaError(rt, status) + " [" + rt.path + "]";
    return nullptr;
  }
  if (devices < nranks) {
    // ncclCommInitAll gives each rank its own device; two ranks on one GPU is NCCL's
    // "duplicate GPU" error.
    *whyNot = std::to_string(nranks) + " ranks need " + std::to_string(nranks) +
              " GPUs, cudaGetDeviceCount found " + std::to_string(devices);
    return nullptr;
  }
  auto memory = std::make_unique<DeviceMemory>(rt);
  for (int r = 0; r < nranks; ++r) {
    status = memory->addRank(r);
    if (status != 0) {
      *whyNot = "device " + std::to_string(r) + ": cudaStreamCreate returned " +
                describeCudaError(rt, status);
      return nullptr;
    }
  }
  return memory;
}

}  // namespace braid::validate_nccl
