// All-reduce of device buffers by N thread ranks on one GPU, through the NCCL API of whichever
// libnccl it is linked or run against (Braid's), in nccl-tests' columns: the configuration a
// one-GPU machine tests (NVIDIA's NCCL refuses two ranks on one GPU). Each rank is a thread
// with its own stream and cudaMalloc buffers; every size is checked element by element
// (#wrong), and timed as direct launches or, with -G, as a CUDA graph of the iterations
// replayed. Also reports the one-GPU memory bound: all ranks share one HBM, so a call of S bytes
// on n ranks moves at least 2nS bytes (each input read, each output written), at the rate a
// device-to-device copy reaches (bytes read plus written per second).
//
//   thread_ranks_perf [-t RANKS] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [-G 0|1]
//
// Exit status 0 when every check passed, 1 on a wrong element or a failed call.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

struct Options {
  int ranks = 2;
  size_t minBytes = 8, maxBytes = size_t{256} << 20;
  int factor = 4, iters = 20, warmup = 5;
  bool graph = false;
};

#define CHECK_CUDA(call)                                                                         \
  do {                                                                                           \
    const cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_NCCL(call)                                                     \
  do {                                                                       \
    const ncclResult_t r_ = (call);                                          \
    if (r_ != ncclSuccess) {                                                 \
      std::fprintf(stderr, "%s:%d %s: %s (%s)\n", __FILE__, __LINE__, #call, \
                   ncclGetErrorString(r_), ncclGetLastError(nullptr));       \
      std::exit(1);                                                          \
    }                                                                        \
  } while (0)

size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K':
    case 'k':
      v *= 1024;
      break;
    case 'M':
    case 'm':
      v *= 1024.0 * 1024;
      break;
    case 'G':
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
    default:
      break;
  }
  return static_cast<size_t>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "-t")
      o.ranks = std::atoi(v);
    else if (flag == "-b")
      o.minBytes = parseSize(v);
    else if (flag == "-e")
      o.maxBytes = parseSize(v);
    else if (flag == "-f")
      o.factor = std::atoi(v);
    else if (flag == "-n")
      o.iters = std::atoi(v);
    else if (flag == "-w")
      o.warmup = std::atoi(v);
    else if (flag == "-G")
      o.graph = std::atoi(v) != 0;
    else {
      std::fprintf(stderr, "thread_ranks_perf: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  o.minBytes = std::max<size_t>(o.minBytes / 4 * 4, 4);
  return o;
}

/// Bytes read plus written per second by a device-to-device copy of `bytes`.
double copyBandwidth(size_t bytes) {
  void *a, *b;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaEventRecord(start));
  for (int i = 0; i < 10; ++i) CHECK_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaEventRecord(stop));
  CHECK_CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  return 2.0 * bytes * 10 / (ms * 1e-3);
}

/// Rank r's input: small integers, so float sums are exact in any order.
float inputOf(int rank, size_t i) {
  return static_cast<float>((rank + 1) + static_cast<int>(i % 7));
}

struct Shared {
  Options o;
  ncclUniqueId id;
  std::barrier<> barrier;
  std::vector<double> seconds;  ///< per rank, of the current size
  std::atomic<long> wrong{0};
  explicit Shared(const Options& options)
      : o(options), barrier(options.ranks), seconds(options.ranks, 0) {}
};

void rankMain(Shared& s, int rank, std::vector<std::string>* rows) {
  const Options& o = s.o;
  CHECK_CUDA(cudaSetDevice(0));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitRank(&comm, o.ranks, s.id, rank));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float *send, *recv;
  CHECK_CUDA(cudaMalloc(&send, o.maxBytes));
  CHECK_CUDA(cudaMalloc(&recv, o.maxBytes));
  std::vector<float> host(o.maxBytes / 4);
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes; bytes *= std::max(o.factor, 2)) {
    const size_t count = bytes / 4;
    for (size_t i = 0; i < count; ++i) host[i] = inputOf(rank, i);
    CHECK_CUDA(cudaMemcpy(send, host.data(), bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(recv, 0xff, bytes));  // poisoned: NaN
    for (int i = 0; i < o.warmup; ++i)
      CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    cudaGraphExec_t exec = nullptr;
    if (o.graph) {
      cudaGraph_t graph;
      CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int i = 0; i < o.iters; ++i)
        CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
      CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
      CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      CHECK_CUDA(cudaGraphDestroy(graph));
    }
    s.barrier.arrive_and_wait();
    const auto start = std::chrono::steady_clock::now();
    if (exec) {
      CHECK_CUDA(cudaGraphLaunch(exec, stream));
    } else {
      for (int i = 0; i < o.iters; ++i)
        CHECK_NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
    s.seconds[rank] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.iters;
    if (exec) CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaMemcpy(host.data(), recv, bytes, cudaMemcpyDeviceToHost));
    long wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < o.ranks; ++r) want += inputOf(r, i);
      wrong += host[i] != want;
    }
    s.wrong += wrong;
    s.barrier.arrive_and_wait();
    if (rank == 0) {
      const double t = *std::max_element(s.seconds.begin(), s.seconds.end());
      const double algbw = bytes / t / 1e9;
      const double busbw = algbw * 2.0 * (o.ranks - 1) / o.ranks;
      char row[256];
      std::snprintf(row, sizeof(row), "%12zu %12zu %8s %6s %6d %10.2f %7.2f %7.2f %6ld", bytes,
                    count, "float", "sum", -1, t * 1e6, algbw, busbw, s.wrong.load());
      rows->push_back(row);
      std::printf("%s\n", row);
      std::fflush(stdout);
    }
    s.barrier.arrive_and_wait();
    if (rank == 0) s.wrong = 0;
    if (bytes > o.maxBytes / std::max(o.factor, 2)) break;
  }
  CHECK_CUDA(cudaFree(send));
  CHECK_CUDA(cudaFree(recv));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_NCCL(ncclCommDestroy(comm));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  // A launch that cannot finish (a rank's blocks not resident, a lost peer) fails in 10 s
  // instead of the library's default minutes, unless the caller set a deadline.
  setenv("BRAID_TIMEOUT_S", "10", 0);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("thread_ranks_perf: no CUDA device\n");
    return 3;
  }
  CHECK_CUDA(cudaSetDevice(0));
  const double copy = copyBandwidth(std::min<size_t>(o.maxBytes, size_t{1} << 30));
  std::printf("# thread_ranks_perf: %d thread ranks on GPU 0, %s launches, %d iterations\n",
              o.ranks, o.graph ? "CUDA graph" : "direct", o.iters);
  std::printf(
      "# device-to-device copy: %.1f GB/s (read + written); one-GPU bound for S bytes: "
      "2nS / that\n",
      copy / 1e9);
  std::printf("#%11s %12s %8s %6s %6s %10s %7s %7s %6s\n", "size", "count", "type", "redop", "root",
              "time(us)", "algbw", "busbw", "#wrong");
  Shared shared(o);
  CHECK_NCCL(ncclGetUniqueId(&shared.id));
  std::vector<std::string> rows;
  std::vector<std::thread> threads;
  for (int r = 0; r < o.ranks; ++r) threads.emplace_back(rankMain, std::ref(shared), r, &rows);
  for (std::thread& t : threads) t.join();
  long wrong = 0;
  for (const std::string& row : rows) {
    size_t bytes = 0;
    double us = 0;
    long w = 0;
    char type[16], op[16];
    int root;
    size_t count;
    double algbw, busbw;
    if (std::sscanf(row.c_str(), "%zu %zu %15s %15s %d %lf %lf %lf %ld", &bytes, &count, type, op,
                    &root, &us, &algbw, &busbw, &w) != 9)
      continue;
    wrong += w;
    const double bound = 2.0 * o.ranks * bytes / copy;  // seconds
    std::printf("thread-ranks: %d ranks %s %zu B: %.2f us, %.0f%% of the one-GPU memory bound\n",
                o.ranks, o.graph ? "graph" : "direct", bytes, us, 100.0 * bound / (us * 1e-6));
  }
  std::printf("# Out of bounds values : %ld %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
  return wrong == 0 ? 0 : 1;
}
