// Elements of every ncclDataType_t as exact doubles and back, from the bit layouts of the dtype
// table (kernels/datatypes.h) and not from the library's conversion code, so that what the
// benchmarks and tests expect does not share a mistake with what they check.
#pragma once

#include <cstddef>
#include <cstdint>

#include "braid/datatypes.h"
#include "nccl.h"

namespace braid::verifiable {

using braid::FloatFormat;

/// Nearest-even encoding of value into the format (values past the largest finite one become
/// infinity, or NaN for formats without infinity). Works up to binary64.
std::uint64_t encodeFloat(const FloatFormat& format, double value);
/// Exact value of an encoded element.
double decodeFloat(const FloatFormat& format, std::uint64_t bits);

/// Distance between adjacent representable values of a floating type around value (1 for
/// integer types): the tolerance for results that are rounded once (ncclAvg).
double unitInLastPlace(ncclDataType_t type, double value);

/// Writes value (exactly representable, or rounded to nearest-even) as element `index`.
void storeElement(void* base, std::size_t index, ncclDataType_t type, double value);
/// Reads element `index` as a double (exact for every type except 64-bit integers past 2^53).
double loadElement(const void* base, std::size_t index, ncclDataType_t type);
/// value as the type holds it (rounded to nearest-even, integers converted).
double roundToType(ncclDataType_t type, double value);

}  // namespace braid::verifiable
