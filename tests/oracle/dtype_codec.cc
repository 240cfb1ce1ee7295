#include "oracle/dtype_codec.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "verifiable/element_codec.h"

namespace braid::oracle {
namespace {

// Per dtype: exactBits, minShift, maxShift, poison.
DTypeInfo makeInfo(ncclDataType_t type, int exactBits, int minShift, int maxShift,
                   uint64_t poison) {
  DTypeInfo info{braid::dataType(type)};
  info.exactBits = exactBits;
  info.minShift = minShift;
  info.maxShift = maxShift;
  info.poison = poison;
  return info;
}

const DTypeInfo kInfos[kNumDTypes] = {
    makeInfo(ncclInt8, 0, 0, 0, 0xA5),
    makeInfo(ncclUint8, 0, 0, 0, 0xA5),
    makeInfo(ncclInt32, 0, 0, 0, 0xA5A5A5A5),
    makeInfo(ncclUint32, 0, 0, 0, 0xA5A5A5A5),
    makeInfo(ncclInt64, 0, 0, 0, 0xA5A5A5A5A5A5A5A5ull),
    makeInfo(ncclUint64, 0, 0, 0, 0xA5A5A5A5A5A5A5A5ull),
    makeInfo(ncclFloat16, 11, -12, 4, 0x7DA5),
    makeInfo(ncclFloat32, 24, -60, 60, 0x7FA5A5A5),
    makeInfo(ncclFloat64, 53, -300, 300, 0x7FF5A5A5A5A5A5A5ull),
    makeInfo(ncclBfloat16, 8, -60, 60, 0x7FA5),
    makeInfo(ncclFloat8e4m3, 4, -6, 4, 0x7F),
    makeInfo(ncclFloat8e5m2, 3, -13, 12, 0x7D),
};

uint64_t lowMask(size_t bytes) {
  return bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
}

}  // namespace

const DTypeInfo& dtypeInfo(ncclDataType_t type) {
  int i = static_cast<int>(type);
  if (i < 0 || i >= kNumDTypes || kInfos[i].type != type)
    throw std::logic_error("oracle: no such dtype " + std::to_string(i));
  return kInfos[i];
}

uint64_t maskBits(const DTypeInfo& t, uint64_t bits) {
  return bits & lowMask(t.size);
}

int64_t signedValue(const DTypeInfo& t, uint64_t bits) {
  bits = maskBits(t, bits);
  if (!t.isSigned || t.size == 8) return static_cast<int64_t>(bits);
  const int shift = 64 - 8 * static_cast<int>(t.size);
  return static_cast<int64_t>(bits << shift) >> shift;
}

bool isNaNBits(const DTypeInfo& t, uint64_t bits) {
  if (!t.isFloat) return false;
  return std::isnan(decodeFloat(t, bits));
}

bool isInfBits(const DTypeInfo& t, uint64_t bits) {
  if (!t.isFloat) return false;
  return std::isinf(decodeFloat(t, bits));
}

double decodeFloat(const DTypeInfo& t, uint64_t bits) {
  return verifiable::decodeFloat(t.format, maskBits(t, bits));
}

uint64_t encodeFloat(const DTypeInfo& t, double v) {
  if (std::isnan(v)) throw std::logic_error("oracle: NaN is never an expected value");
  const uint64_t bits = verifiable::encodeFloat(t.format, v);
  // The decode must give the value back: no rounding, no overflow (this also rejects e4m3's
  // NaN code and infinity where the format has none).
  const double back = decodeFloat(t, bits);
  if (back != v || std::signbit(back) != std::signbit(v)) {
    std::ostringstream s;
    s.precision(17);
    s << "oracle: " << v << " is not exactly representable in " << t.name;
    throw std::logic_error(s.str());
  }
  return bits;
}

std::string describeElement(const DTypeInfo& t, uint64_t bits) {
  std::ostringstream s;
  bits = maskBits(t, bits);
  if (t.isFloat) {
    s.precision(10);
    s << decodeFloat(t, bits);
  } else if (t.isSigned) {
    s << signedValue(t, bits);
  } else {
    s << bits;
  }
  s << " (0x" << std::hex << bits << ")";
  return s.str();
}

uint64_t loadElement(const DTypeInfo& t, const void* buf, size_t i) {
  uint64_t bits = 0;
  memcpy(&bits, static_cast<const char*>(buf) + i * t.size, t.size);  // little-endian host
  return bits;
}

void storeElement(const DTypeInfo& t, void* buf, size_t i, uint64_t bits) {
  memcpy(static_cast<char*>(buf) + i * t.size, &bits, t.size);
}

}  // namespace braid::oracle
