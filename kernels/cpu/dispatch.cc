// The public kernel entry points: run-time choice of the CPU variant and the byte copy.
// This unit is compiled without ISA flags; it only reads CPUID before calling a variant.
#include <cstdlib>
#include <cstring>

#include "braid/datatypes.h"
#include "kernels/cpu/isa.h"
#include "kernels/ops.h"
#include "kernels/reduce.h"
#include "util/settings.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace braid::kernels {
namespace cpu {
namespace {

struct CpuFeatures {
  bool avx2 = false;        // AVX2 + F16C, with the OS saving ymm state
  bool avx512 = false;      // AVX512 F/BW/VL/DQ, with the OS saving zmm and opmask state
  bool avx512Bf16 = false;  // AVX512-BF16 on top of avx512
};

CpuFeatures detectCpu() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = ecx & (1u << 27), avx = ecx & (1u << 28), f16c = ecx & (1u << 29);
  if (!osxsave || !avx || __get_cpuid_max(0, nullptr) < 7) return f;
  unsigned xcr0Low = 0, xcr0High = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0Low), "=d"(xcr0High) : "c"(0));
  const bool ymmState = (xcr0Low & 0x6u) == 0x6u;    // SSE + AVX state
  const bool zmmState = (xcr0Low & 0xE6u) == 0xE6u;  // + opmask, ZMM_Hi256, Hi16_ZMM
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const unsigned leaf7Ebx = ebx;
  const bool avx2 = leaf7Ebx & (1u << 5);
  const bool avx512 = (leaf7Ebx & (1u << 16)) && (leaf7Ebx & (1u << 17)) &&
                      (leaf7Ebx & (1u << 30)) && (leaf7Ebx & (1u << 31));  // F, DQ, BW, VL
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  const bool bf16 = eax & (1u << 5);
  f.avx2 = ymmState && avx2 && f16c;
  f.avx512 = f.avx2 && zmmState && avx512;
  f.avx512Bf16 = f.avx512 && bf16;
#endif
  return f;
}

const CpuFeatures& cpuFeatures() {
  static const CpuFeatures features = detectCpu();
  return features;
}

/// BRAID_KERNEL_ISA=avx512|avx2|scalar: the highest variant family allowed (unset: all; another
/// value is refused when a communicator is created, and allows all here, with a warning).
Variant isaCapFromEnvironment() {
  const char* cap = settingRaw(Setting::kKernelIsa);
  if (cap == nullptr) return Variant::kAvx512Bf16;
  if (std::strcmp(cap, "scalar") == 0) return Variant::kScalar;
  if (std::strcmp(cap, "avx2") == 0) return Variant::kAvx2;
  return Variant::kAvx512Bf16;
}

}  // namespace

ReduceFn reduceFor(Variant variant) {
  const CpuFeatures& cpu = cpuFeatures();
  switch (variant) {
    case Variant::kScalar:
      return reduceScalar;
#if defined(BRAID_KERNELS_AVX2)
    case Variant::kAvx2:
      return cpu.avx2 ? reduceAvx2 : nullptr;
#endif
#if defined(BRAID_KERNELS_AVX512)
    case Variant::kAvx512:
      return cpu.avx512 ? reduceAvx512 : nullptr;
#endif
#if defined(BRAID_KERNELS_AVX512BF16)
    case Variant::kAvx512Bf16:
      return cpu.avx512Bf16 ? reduceAvx512Bf16 : nullptr;
#endif
    default:
      (void)cpu;
      return nullptr;
  }
}

Conversions conversionsFor(Variant variant) {
  if (reduceFor(variant) == nullptr) return {};
  switch (variant) {
    case Variant::kScalar:
      return {decodeScalar, encodeScalar};
#if defined(BRAID_KERNELS_AVX2)
    case Variant::kAvx2:
      return {decodeAvx2, encodeAvx2};
#endif
#if defined(BRAID_KERNELS_AVX512)
    case Variant::kAvx512:
      return {decodeAvx512, encodeAvx512};
#endif
#if defined(BRAID_KERNELS_AVX512BF16)
    case Variant::kAvx512Bf16:
      return {decodeAvx512, encodeAvx512Bf16};
#endif
    default:
      return {};
  }
}

const char* variantName(Variant variant) {
  static const char* const names[kVariantCount] = {"scalar", "avx2", "avx512", "avx512bf16"};
  return names[static_cast<int>(variant)];
}

const char* isaFamilyName(Variant variant) {
  return variant == Variant::kAvx512Bf16 ? "avx512" : variantName(variant);
}

Variant selectedVariant() {
  static const Variant selected = [] {
    int best = static_cast<int>(isaCapFromEnvironment());
    while (best > 0 && reduceFor(static_cast<Variant>(best)) == nullptr) --best;
    return static_cast<Variant>(best);
  }();
  return selected;
}

void copyBytes(void* out0, void* out1, const void* src, std::size_t bytes) {
  if (out1 == src) out1 = nullptr;
  if (out0 == src) {
    out0 = out1;
    out1 = nullptr;
  }
  if (out0 == nullptr || bytes == 0) return;
  if (out1 == nullptr) {
    std::memcpy(out0, src, bytes);
    return;
  }
  // Two destinations: copy in L1-sized chunks so the second copy reads src from cache and
  // memory sees one read pass.
  constexpr std::size_t kChunk = 16 * 1024;
  auto* d0 = static_cast<unsigned char*>(out0);
  auto* d1 = static_cast<unsigned char*>(out1);
  const auto* s = static_cast<const unsigned char*>(src);
  for (std::size_t offset = 0; offset < bytes; offset += kChunk) {
    const std::size_t n = bytes - offset < kChunk ? bytes - offset : kChunk;
    std::memcpy(d0 + offset, s + offset, n);
    std::memcpy(d1 + offset, s + offset, n);
  }
}

}  // namespace cpu

void reduce(const ReduceOp& op, void* out0, void* out1, const void* acc, const void* local,
            std::size_t count, unsigned flags) {
  static const cpu::ReduceFn selected = cpu::reduceFor(cpu::selectedVariant());
  selected(op, out0, out1, acc, local, count, flags);
}

void copy(void* out0, void* out1, const void* src, std::size_t bytes) {
  cpu::copyBytes(out0, out1, src, bytes);
}

std::size_t typeSize(int dtype) {
  const DataType* type = findDataType(dtype);
  return type ? type->size : 0;
}

const char* isaName() {
  return cpu::isaFamilyName(cpu::selectedVariant());
}

}  // namespace braid::kernels
