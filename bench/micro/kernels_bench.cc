// Memory bandwidth of the CPU kernels, per ISA variant, next to memcpy and the STREAM add loop.
// Bandwidth counts bytes read plus bytes written once each (STREAM counting: a reduce of n bytes
// per buffer into a separate output moves 3n, with out1 4n; memcpy 2n; STREAM add 3n).
//
//   kernels_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// Names: reduce/<case>/<variant>/<size>, memcpy/<size>, copy2/<size> (kernels::copy to two
// destinations) next to memcpy_twice/<size> (two memcpy calls),
// stream_add/<variant>/<size> and stream_add_nt/avx2/<size> (the same loop with non-temporal
// stores); the "bytes" counter is bytes per second of CPU time (the runs
// are single-threaded; CPU time keeps other processes on a shared machine out of the numbers).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/micro/stream_add.h"
#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "kernels/reduce.h"

namespace braid::bench {
namespace {

using kernels::BaseOp;
using kernels::ReduceOp;
using kernels::cpu::Variant;
namespace dtype = kernels::dtype;

constexpr std::size_t kSizes[] = {64u << 10, 1u << 20, 16u << 20, 64u << 20};

std::string sizeName(std::size_t bytes) {
  return bytes >= (1u << 20) ? std::to_string(bytes >> 20) + "MiB"
                             : std::to_string(bytes >> 10) + "KiB";
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char, FreeDeleter>;

/// A page-aligned buffer, touched so page faults stay out of the timing.
Buffer allocate(std::size_t bytes) {
  Buffer buffer(static_cast<unsigned char*>(std::aligned_alloc(4096, bytes)));
  std::memset(buffer.get(), 0, bytes);
  return buffer;
}

/// Moderate values of the dtype (no subnormals, no overflow in a sum).
void fillValues(int d, void* data, std::size_t bytes, int seed) {
  const std::size_t n = bytes / kernels::typeSize(d);
  for (std::size_t i = 0; i < n; ++i) {
    const float v = 1.0f + static_cast<float>((i * 7 + seed) % 97) / 64.0f;
    switch (d) {
      case dtype::kFloat32:
        static_cast<float*>(data)[i] = v;
        break;
      case dtype::kFloat64:
        static_cast<double*>(data)[i] = v;
        break;
      case dtype::kInt32:
        static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(i);
        break;
      case dtype::kFloat16:
        static_cast<std::uint16_t*>(data)[i] = kernels::floatToHalf(v);
        break;
      case dtype::kBfloat16:
        static_cast<std::uint16_t*>(data)[i] = kernels::floatToBf16(v);
        break;
      default:
        break;
    }
  }
}

struct ReduceCase {
  const char* name;
  int dtype;
  BaseOp op;
  bool preMul;
  bool out1;
};

constexpr ReduceCase kCases[] = {
    {"fp32_sum", dtype::kFloat32, BaseOp::kSum, false, false},
    {"bf16_sum", dtype::kBfloat16, BaseOp::kSum, false, false},
    {"fp16_sum", dtype::kFloat16, BaseOp::kSum, false, false},
    {"fp64_sum", dtype::kFloat64, BaseOp::kSum, false, false},
    {"int32_sum", dtype::kInt32, BaseOp::kSum, false, false},
    {"fp32_max", dtype::kFloat32, BaseOp::kMax, false, false},
    {"fp32_premulsum", dtype::kFloat32, BaseOp::kSum, true, false},
    {"fp32_sum_out1", dtype::kFloat32, BaseOp::kSum, false, true},
};

void setBytesCounter(benchmark::State& state, std::size_t bytesPerIteration) {
  state.counters["bytes"] =
      benchmark::Counter(static_cast<double>(bytesPerIteration) * state.iterations(),
                         benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
}

void benchReduce(benchmark::State& state, kernels::cpu::ReduceFn reduceFn, ReduceCase c,
                 std::size_t bytes) {
  Buffer acc = allocate(bytes), local = allocate(bytes), out0 = allocate(bytes);
  Buffer out1 = c.out1 ? allocate(bytes) : nullptr;
  fillValues(c.dtype, acc.get(), bytes, 1);
  fillValues(c.dtype, local.get(), bytes, 2);
  ReduceOp op;
  op.dtype = c.dtype;
  op.op = c.op;
  op.preMul = c.preMul;
  const float factor = 0.5f;
  std::memcpy(op.scalar, &factor, sizeof(factor));
  const std::size_t count = bytes / kernels::typeSize(c.dtype);
  for (auto _ : state) {
    reduceFn(op, out0.get(), out1.get(), acc.get(), local.get(), count, kernels::kApplyPre);
    benchmark::ClobberMemory();
  }
  setBytesCounter(state, bytes * (c.out1 ? 4 : 3));
}

void benchMemcpy(benchmark::State& state, std::size_t bytes) {
  Buffer src = allocate(bytes), dst = allocate(bytes);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  setBytesCounter(state, 2 * bytes);
}

/// kernels::copy to two destinations (one read, two writes).
void benchCopyTwo(benchmark::State& state, std::size_t bytes) {
  Buffer src = allocate(bytes), dst0 = allocate(bytes), dst1 = allocate(bytes);
  for (auto _ : state) {
    kernels::copy(dst0.get(), dst1.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  setBytesCounter(state, 3 * bytes);
}

/// The same two-destination copy as two plain memcpy calls (counted the same way, 3n).
void benchMemcpyTwice(benchmark::State& state, std::size_t bytes) {
  Buffer src = allocate(bytes), dst0 = allocate(bytes), dst1 = allocate(bytes);
  for (auto _ : state) {
    std::memcpy(dst0.get(), src.get(), bytes);
    std::memcpy(dst1.get(), src.get(), bytes);
    benchmark::ClobberMemory();
  }
  setBytesCounter(state, 3 * bytes);
}

void benchStreamAdd(benchmark::State& state, StreamAddFn add, std::size_t bytes) {
  Buffer a = allocate(bytes), b = allocate(bytes), c = allocate(bytes);
  fillValues(dtype::kFloat64, a.get(), bytes, 1);
  fillValues(dtype::kFloat64, b.get(), bytes, 2);
  const std::size_t n = bytes / sizeof(double);
  for (auto _ : state) {
    add(reinterpret_cast<double*>(c.get()), reinterpret_cast<const double*>(a.get()),
        reinterpret_cast<const double*>(b.get()), n);
    benchmark::ClobberMemory();
  }
  setBytesCounter(state, 3 * bytes);
}

void registerAll() {
  for (std::size_t bytes : kSizes) {
    const std::string size = sizeName(bytes);
    benchmark::RegisterBenchmark(("memcpy/" + size).c_str(), benchMemcpy, bytes);
    benchmark::RegisterBenchmark(("copy2/" + size).c_str(), benchCopyTwo, bytes);
    benchmark::RegisterBenchmark(("memcpy_twice/" + size).c_str(), benchMemcpyTwice, bytes);
    for (int v = 0; v < kernels::cpu::kVariantCount; ++v) {
      const auto variant = static_cast<Variant>(v);
      const kernels::cpu::ReduceFn reduceFn = kernels::cpu::reduceFor(variant);
      if (reduceFn == nullptr) continue;
      const std::string variantName = kernels::cpu::variantName(variant);
      if (variant != Variant::kAvx512Bf16) {
        benchmark::RegisterBenchmark(("stream_add/" + variantName + "/" + size).c_str(),
                                     benchStreamAdd, streamAddFor(variant), bytes);
        if (StreamAddFn nt = streamAddNonTemporalFor(variant))
          benchmark::RegisterBenchmark(("stream_add_nt/" + variantName + "/" + size).c_str(),
                                       benchStreamAdd, nt, bytes);
      }
      for (const ReduceCase& c : kCases) {
        // The BF16-instruction variant differs from avx512 for bf16 only.
        if (variant == Variant::kAvx512Bf16 && c.dtype != dtype::kBfloat16) continue;
        const std::string name = std::string("reduce/") + c.name + "/" + variantName + "/" + size;
        benchmark::RegisterBenchmark(name.c_str(), benchReduce, reduceFn, c, bytes);
      }
    }
  }
}

}  // namespace
}  // namespace braid::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  braid::bench::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
