// The twelve ncclDataType_t formats described from first principles (bit layouts from the dtype
// table, decoded and encoded by verifiable/'s codec, not the library's conversion code), so the
// oracle's expected values are independent of what it tests. Values travel as raw bits in a
// uint64_t (the low `size` bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "braid/datatypes.h"
#include "nccl.h"

namespace braid::oracle {

/// The library's dtype table entry (size, name, bit layout) and what the oracle adds to it.
struct DTypeInfo : braid::DataType {
  /// Every integer in [-2^exactBits, 2^exactBits] is exactly representable.
  int exactBits = 0;
  /// Exponent shifts 2^j (j in [minShift, maxShift]) that keep every test value (including
  /// quarter-scaled and eighth-divided ones) representable without rounding or overflow.
  int minShift = 0;
  int maxShift = 0;
  /// Pattern written over outputs before a run: a NaN for floats, 0xA5 bytes for integers.
  uint64_t poison = 0;
};

const DTypeInfo& dtypeInfo(ncclDataType_t type);
constexpr int kNumDTypes = 12;

/// Float bits -> value (exact). NaN for NaN codes.
double decodeFloat(const DTypeInfo& t, uint64_t bits);
/// Value -> float bits; throws std::logic_error unless `v` is exactly representable (the oracle
/// only ever builds representable values, so this is a check on the oracle itself).
uint64_t encodeFloat(const DTypeInfo& t, double v);
bool isNaNBits(const DTypeInfo& t, uint64_t bits);
bool isInfBits(const DTypeInfo& t, uint64_t bits);

/// Integer bits -> value with the type's signedness (sign-extended into int64 / zero-extended).
int64_t signedValue(const DTypeInfo& t, uint64_t bits);
uint64_t maskBits(const DTypeInfo& t, uint64_t bits);

/// Human-readable element for failure messages ("1.5 (0x3e00)").
std::string describeElement(const DTypeInfo& t, uint64_t bits);

/// Reads/writes element `i` of a buffer of `t`.
uint64_t loadElement(const DTypeInfo& t, const void* buf, size_t i);
void storeElement(const DTypeInfo& t, void* buf, size_t i, uint64_t bits);

}  // namespace braid::oracle
