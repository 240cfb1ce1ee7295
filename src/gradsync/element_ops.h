// Element-level helpers of the gradient layer: dtype sizes and names, fp16/bf16 conversions
// (round to nearest even, as the wire formats need) and local accumulation. Built on nothing but
// the public dtype enum and the dtype table (include/braid/datatypes.h, a header over nccl.h alone), so
// the layer stays on Braid's public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace braid::gradsync {

/// The floating types a gradient may have (fp16, bf16, fp32, fp64).
bool isGradientType(ncclDataType_t dtype);
/// Bytes per element of any NCCL dtype; 0 for values outside the enum.
size_t elementSize(ncclDataType_t dtype);
/// "float32", "bfloat16", ... or "dtype(42)".
std::string dtypeName(ncclDataType_t dtype);

uint16_t floatToHalf(float value);
float halfToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);
float bfloat16ToFloat(uint16_t bits);

/// fp32 -> fp16 or bf16 (`wire` is ncclFloat16 or ncclBfloat16), round to nearest even.
void narrowFloats(const float* source, uint16_t* wire, size_t count, ncclDataType_t wireType);
/// fp16 or bf16 -> fp32 (exact).
void widenFloats(const uint16_t* wire, float* destination, size_t count, ncclDataType_t wireType);

/// destination[i] += source[i] in `dtype` (fp16/bf16 added in fp32, then rounded once).
void accumulate(void* destination, const void* source, size_t count, ncclDataType_t dtype);

/// Element `index` of `data` as a double (for error messages).
double elementAsDouble(const void* data, size_t index, ncclDataType_t dtype);

}  // namespace braid::gradsync
