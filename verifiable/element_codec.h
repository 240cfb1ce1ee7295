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
/// infinity, or NaN for formats without infinity). Works up to binary64: float and double by
/// the hardware's conversion, the 8- and 16-bit types by a table of their values
/// (narrow_format_table.h), any other layout by encodeFloatByLayout.
std::uint64_t encodeFloat(const FloatFormat& format, double value);
/// Exact value of an encoded element (the same three ways).
double decodeFloat(const FloatFormat& format, std::uint64_t bits);

/// The same from the format's fields alone (sign, exponent, mantissa, bias): what the tables
/// are built from and checked against.
std::uint64_t encodeFloatByLayout(const FloatFormat& format, double value);
double decodeFloatByLayout(const FloatFormat& format, std::uint64_t bits);

/// Distance between adjacent representable values of a floating type around value (1 for
/// integer types): the tolerance for results that are rounded once (ncclAvg).
double unitInLastPlace(ncclDataType_t type, double value);

/// Writes value (exactly representable, or rounded to nearest-even) as element `index`.
void storeElement(void* base, std::size_t index, ncclDataType_t type, double value);
/// Reads element `index` as a double (exact for every type except 64-bit integers past 2^53).
double loadElement(const void* base, std::size_t index, ncclDataType_t type);
/// value as the type holds it (rounded to nearest-even, integers converted). Inline for float
/// and double, which the hardware rounds: the generators call it millions of times per case.
double roundToNarrowOrInteger(ncclDataType_t type, double value);
inline double roundToType(ncclDataType_t type, double value) {
  if (type == ncclFloat32) return static_cast<float>(value);
  if (type == ncclFloat64) return value;
  return roundToNarrowOrInteger(type, value);
}

}  // namespace braid::verifiable
