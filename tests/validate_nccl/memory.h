// Where the worker's buffers live: host memory (Braid's path today; streams are null, so every
// call completes before it returns) or device memory through the dlopened CUDA runtime (what
// NVIDIA's NCCL needs), one device and one stream per rank.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "loader.h"

namespace braid::validate_nccl {

class Memory {
 public:
  virtual ~Memory() = default;
  virtual bool isDevice() const = 0;
  virtual void* allocate(int rank, std::size_t bytes) = 0;
  virtual void release(int rank, void* pointer) = 0;
  virtual void upload(int rank, void* device, const void* host, std::size_t bytes) = 0;
  virtual void download(int rank, void* host, const void* device, std::size_t bytes) = 0;
  virtual cudaStream_t stream(int rank) = 0;
  /// Waits for the rank's stream; throws on a CUDA error.
  virtual void synchronize(int rank) = 0;
};

std::unique_ptr<Memory> makeHostMemory();

/// Checks that nranks devices exist (rank r uses device r) and creates their streams; on
/// failure returns null with the reason in *whyNot (the "cannot run" line's text).
std::unique_ptr<Memory> makeDeviceMemory(const std::string& cudartPath, int nranks,
                                         std::string* whyNot);

}  // namespace braid::validate_nccl
