// Internal surface of the CPU kernels: the compiled variants and how one is chosen.
// The algorithms use kernels/reduce.h only; tests and benchmarks use this header to run every
// variant in one process.
#pragma once

#include <cstddef>

#include "kernels/reduce.h"

namespace braid::kernels::cpu {

/// The compiled variants, from most portable to fastest. kAvx512Bf16 is the AVX-512 variant that
/// also uses AVX512-BF16's vcvtneps2bf16; both AVX-512 variants report the ISA name "avx512".
enum class Variant : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };
inline constexpr int kVariantCount = 4;

using ReduceFn = void (*)(const ReduceOp& op, void* out0, void* out1, const void* acc,
                          const void* local, std::size_t count, unsigned flags);

/// The reduce of a variant; nullptr when it was not compiled in or this CPU cannot run it.
ReduceFn reduceFor(Variant variant);

/// "scalar", "avx2", "avx512" or "avx512bf16" (the variant's own name, for test and bench names).
const char* variantName(Variant variant);

/// The ISA family reported by isaName(): "scalar", "avx2" or "avx512".
const char* isaFamilyName(Variant variant);

/// The variant reduce() uses: the fastest this CPU runs, capped by BRAID_KERNEL_ISA.
Variant selectedVariant();

/// Copies `bytes` from src to out0 and, when set, out1, reading src once (destinations equal
/// to src are skipped). Shared by every variant: memcpy is already vectorised by the C library.
void copyBytes(void* out0, void* out1, const void* src, std::size_t bytes);

/// The narrow-float conversions of a variant (fp16, bf16, fp8 e4m3/e5m2; other dtypes do
/// nothing), as the reduce uses them: exposed so tests can sweep them over any float.
struct Conversions {
  void (*decode)(int dtype, const void* src, float* dst, std::size_t n) = nullptr;
  void (*encode)(int dtype, const float* src, void* dst, std::size_t n) = nullptr;
};

/// The conversions of a variant; both nullptr when reduceFor(variant) is nullptr.
Conversions conversionsFor(Variant variant);

// Variant entry points, each in its own translation unit compiled for its ISA.
void reduceScalar(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                  std::size_t count, unsigned flags);
void reduceAvx2(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                std::size_t count, unsigned flags);
void reduceAvx512(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
                  std::size_t count, unsigned flags);
void reduceAvx512Bf16(const ReduceOp& op, void* out0, void* out1, const void* acc,
                      const void* local, std::size_t count, unsigned flags);

void decodeScalar(int dtype, const void* src, float* dst, std::size_t n);
void encodeScalar(int dtype, const float* src, void* dst, std::size_t n);
void decodeAvx2(int dtype, const void* src, float* dst, std::size_t n);
void encodeAvx2(int dtype, const float* src, void* dst, std::size_t n);
void decodeAvx512(int dtype, const void* src, float* dst, std::size_t n);
void encodeAvx512(int dtype, const float* src, void* dst, std::size_t n);
void encodeAvx512Bf16(int dtype, const float* src, void* dst, std::size_t n);

}  // namespace braid::kernels::cpu
