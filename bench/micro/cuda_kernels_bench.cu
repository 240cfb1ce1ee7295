// Bandwidth of the CUDA reduce kernels next to a device-to-device copy, measured in the same run
// on the same buffers: GB/s counting every byte read and written (a copy of S bytes moves 2S, a
// reduce of two inputs into one output 3S), median of the timed iterations (CUDA events).
//
//   cuda_kernels_bench [--bytes N] [--iters N] [--require-device]
//
// Without a device it prints why and exits 0 (1 with --require-device).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/reduce_cuda.h"
#include "kernels/ops.h"

namespace {

using braid::kernels::ReduceOp;
namespace cuda = braid::kernels::cuda;
namespace dtype = braid::kernels::dtype;

void check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "cuda_kernels_bench: %s: %s\n", what, cudaGetErrorString(error));
  std::exit(1);
}

/// Median time in ms of `iters` runs of `body` after two warm-up runs.
double medianMs(cudaStream_t stream, int iters, const std::function<void()>& body) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 2; ++i) body();
  std::vector<float> times;
  for (int i = 0; i < iters; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    body();
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

struct Row {
  std::string name;
  double movedBytes;
  double ms;
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = std::size_t{1} << 30;
  int iters = 20;
  bool requireDevice = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--bytes" && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 0);
    } else if (arg == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--require-device") {
      requireDevice = true;
    } else {
      std::fprintf(stderr,
                   "usage: cuda_kernels_bench [--bytes N] [--iters N] [--require-device]\n");
      return 2;
    }
  }
  int devices = 0;
  const cudaError_t countError = cudaGetDeviceCount(&devices);
  if (countError != cudaSuccess || devices == 0) {
    std::printf("cuda_kernels_bench: skipped: no CUDA device: cudaGetDeviceCount returned %s\n",
                countError != cudaSuccess ? cudaGetErrorName(countError) : "0 devices");
    return requireDevice ? 1 : 0;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  bytes -= bytes % 16;
  void *a, *b, *out;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&out, bytes), "cudaMalloc");
  check(cudaMemset(a, 0x3C, bytes), "cudaMemset");  // 0x3C3C: a finite fp16/bf16 value
  check(cudaMemset(b, 0x3C, bytes), "cudaMemset");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");

  std::vector<Row> rows;
  const double s = static_cast<double>(bytes);
  rows.push_back({"copy (cudaMemcpyAsync D2D)", 2 * s, medianMs(stream, iters, [&] {
                    check(cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice, stream),
                          "cudaMemcpyAsync");
                  })});
  auto reduceRow = [&](const char* name, int d, bool inPlace) {
    ReduceOp op;
    op.dtype = d;
    const std::size_t count = bytes / (d == dtype::kFloat32 ? 4 : 2);
    rows.push_back({name, 3 * s, medianMs(stream, iters, [&] {
                      check(static_cast<cudaError_t>(cuda::reduceAsync(
                                op, inPlace ? a : out, nullptr, a, b, count, 0, stream)),
                            name);
                    })});
  };
  reduceRow("reduce fp32 sum", dtype::kFloat32, false);
  reduceRow("reduce bf16 sum", dtype::kBfloat16, false);
  reduceRow("reduce fp32 sum, in place", dtype::kFloat32, true);
  rows.push_back({"copy kernel, two outputs", 3 * s, medianMs(stream, iters, [&] {
                    check(static_cast<cudaError_t>(cuda::copyAsync(out, b, a, bytes, stream)),
                          "copyAsync");
                  })});
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  std::printf("# cuda_kernels_bench: %s, %d SMs, buffers of %zu bytes, median of %d runs\n",
              prop.name, prop.multiProcessorCount, bytes, iters);
  std::printf("%-30s %12s %10s %10s %8s\n", "kernel", "moved (GB)", "time (ms)", "GB/s", "vs copy");
  const double copyRate = rows[0].movedBytes / rows[0].ms / 1e6;
  for (const Row& r : rows) {
    const double rate = r.movedBytes / r.ms / 1e6;
    std::printf("%-30s %12.3f %10.3f %10.1f %7.0f%%\n", r.name.c_str(), r.movedBytes / 1e9, r.ms,
                rate, 100.0 * rate / copyRate);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(out);
  cudaStreamDestroy(stream);
  return 0;
}
