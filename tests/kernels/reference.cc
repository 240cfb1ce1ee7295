#include "tests/kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace braid::kernels::testing {
namespace {

enum Dtype { kI8, kU8, kI32, kU32, kI64, kU64, kF16, kF32, kF64, kBf16, kE4M3, kE5M2 };

/// Field layout of a binary float format.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;
  int bias;
  bool ieeeSpecials;  // all-ones exponent = inf/NaN; false: e4m3 (only S.1111.111 is NaN)
  bool saturates;     // overflow gives max finite (fp8 SATFINITE) instead of inf
};

FloatFormat formatOf(int dtype) {
  switch (dtype) {
    case kF16:
      return {5, 10, 15, true, false};
    case kBf16:
      return {8, 7, 127, true, false};
    case kE4M3:
      return {4, 3, 7, false, true};
    case kE5M2:
      return {5, 2, 15, true, true};
    default:
      return {8, 23, 127, true, false};  // fp32
  }
}

int totalBits(const FloatFormat& f) {
  return 1 + f.exponentBits + f.mantissaBits;
}

bool formatIsNan(const FloatFormat& f, std::uint64_t bits) {
  const std::uint64_t magnitude = bits & ((1ull << (totalBits(f) - 1)) - 1);
  const std::uint64_t exponentAllOnes = ((1ull << f.exponentBits) - 1) << f.mantissaBits;
  if (!f.ieeeSpecials) return magnitude == ((1ull << (totalBits(f) - 1)) - 1);
  return magnitude > exponentAllOnes;
}

double formatValue(const FloatFormat& f, std::uint64_t bits) {
  const bool negative = (bits >> (totalBits(f) - 1)) & 1;
  const std::uint64_t exponent = (bits >> f.mantissaBits) & ((1ull << f.exponentBits) - 1);
  const std::uint64_t mantissa = bits & ((1ull << f.mantissaBits) - 1);
  double value;
  if (formatIsNan(f, bits)) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (f.ieeeSpecials && exponent == (1ull << f.exponentBits) - 1) {
    value = std::numeric_limits<double>::infinity();
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissaBits);
  } else {
    value = std::ldexp(static_cast<double>(mantissa | (1ull << f.mantissaBits)),
                       static_cast<int>(exponent) - f.bias - f.mantissaBits);
  }
  return negative ? -value : value;
}

/// Code of the largest finite magnitude.
std::uint64_t maxFiniteCode(const FloatFormat& f) {
  if (!f.ieeeSpecials) return (1ull << (totalBits(f) - 1)) - 2;  // e4m3: 0x7E
  return (((1ull << f.exponentBits) - 1) << f.mantissaBits) - 1;
}

/// Values of the non-negative finite codes 0, 1, 2, ... in increasing order (code = index).
const std::vector<double>& finiteMagnitudes(int dtype) {
  static std::vector<double> tables[kDtypeCount];
  std::vector<double>& table = tables[dtype];
  if (table.empty()) {
    const FloatFormat f = formatOf(dtype);
    for (std::uint64_t code = 0; code <= maxFiniteCode(f); ++code) {
      table.push_back(formatValue(f, code));
    }
  }
  return table;
}

std::uint64_t canonicalNan(int dtype) {
  switch (dtype) {
    case kF16:
      return 0x7E00;
    case kBf16:
      return 0x7FC0;
    case kE4M3:
    case kE5M2:
      return 0x7F;
    default:
      return 0x7FC00000;
  }
}

// ---- Integers ----

bool isSigned(int dtype) {
  return dtype == kI8 || dtype == kI32 || dtype == kI64;
}

__int128 integerValue(int dtype, std::uint64_t bits) {
  const int width = 8 * static_cast<int>(typeSize(dtype));
  const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
  bits &= mask;
  if (isSigned(dtype) && (bits >> (width - 1)) & 1) {
    return static_cast<__int128>(bits) - (static_cast<__int128>(1) << width);
  }
  return static_cast<__int128>(bits);
}

std::uint64_t wrapToBits(int dtype, __int128 value) {
  const int width = 8 * static_cast<int>(typeSize(dtype));
  const std::uint64_t low = static_cast<std::uint64_t>(static_cast<unsigned __int128>(value));
  return width == 64 ? low : low & ((1ull << width) - 1);
}

std::uint64_t integerReference(const ReduceOp& op, bool pre, bool post, const std::uint64_t* acc,
                               std::uint64_t localBits) {
  const int d = op.dtype;
  std::uint64_t scalarBits = 0;
  std::memcpy(&scalarBits, op.scalar, typeSize(d));
  // Unsigned 64-bit products need the unsigned 128-bit type; others fit signed 128 bits.
  auto multiply = [](__int128 a, __int128 b) {
    return static_cast<__int128>(static_cast<unsigned __int128>(a) *
                                 static_cast<unsigned __int128>(b));
  };
  __int128 local = integerValue(d, localBits);
  if (pre) local = integerValue(d, wrapToBits(d, multiply(local, integerValue(d, scalarBits))));
  __int128 value = local;
  if (acc) {
    const __int128 a = integerValue(d, *acc);
    switch (op.op) {
      case BaseOp::kSum:
        value = a + local;
        break;
      case BaseOp::kProd:
        value = multiply(a, local);
        break;
      case BaseOp::kMax:
        value = std::max(a, local);
        break;
      case BaseOp::kMin:
        value = std::min(a, local);
        break;
    }
    value = integerValue(d, wrapToBits(d, value));
  }
  if (post) value /= op.postDiv;  // __int128 division truncates toward zero
  return wrapToBits(d, value);
}

// ---- Floats ----

/// maximumNumber/minimumNumber: NaN loses, -0 < +0.
template <class F>
F referenceMax(F a, F b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <class F>
F referenceMin(F a, F b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

/// fp32 and narrow floats: each step exact in double, then rounded to float (the compute
/// precision); double-rounding is harmless since double has more than 2 * 24 + 2 bits.
std::uint64_t floatReference(const ReduceOp& op, bool pre, bool post, const std::uint64_t* acc,
                             std::uint64_t localBits) {
  const int d = op.dtype;
  const bool narrow = isNarrowFloatDtype(d);
  auto toFloat = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  std::uint64_t scalarBits = 0;
  std::memcpy(&scalarBits, op.scalar, typeSize(d));
  double local = exactValue(d, localBits);
  if (pre) {
    local = toFloat(local * exactValue(d, scalarBits));
    if (narrow) local = exactValue(d, nearestEncoding(d, static_cast<float>(local)));
  }
  double value = local;
  if (acc) {
    const double a = exactValue(d, *acc);
    switch (op.op) {
      case BaseOp::kSum:
        value = toFloat(a + local);
        break;
      case BaseOp::kProd:
        value = toFloat(a * local);
        break;
      case BaseOp::kMax:
        value = referenceMax(a, local);
        break;
      case BaseOp::kMin:
        value = referenceMin(a, local);
        break;
    }
  }
  if (post) value = toFloat(value / op.postDiv);
  return nearestEncoding(d, static_cast<float>(value));
}

/// fp64: each step exact or nearly so in __float128 (113 bits > 2 * 53 + 2), rounded to double.
std::uint64_t doubleReference(const ReduceOp& op, bool pre, bool post, const std::uint64_t* acc,
                              std::uint64_t localBits) {
  auto value = [](std::uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  };
  double scalar;
  std::memcpy(&scalar, op.scalar, sizeof(scalar));
  double local = value(localBits);
  if (pre) local = static_cast<double>(static_cast<__float128>(local) * scalar);
  double result = local;
  if (acc) {
    const double a = value(*acc);
    switch (op.op) {
      case BaseOp::kSum:
        result = static_cast<double>(static_cast<__float128>(a) + local);
        break;
      case BaseOp::kProd:
        result = static_cast<double>(static_cast<__float128>(a) * local);
        break;
      case BaseOp::kMax:
        result = referenceMax(a, local);
        break;
      case BaseOp::kMin:
        result = referenceMin(a, local);
        break;
    }
  }
  if (post) result = static_cast<double>(static_cast<__float128>(result) / op.postDiv);
  std::uint64_t bits;
  std::memcpy(&bits, &result, sizeof(bits));
  return bits;
}

}  // namespace

const char* dtypeName(int dtype) {
  static const char* const names[kDtypeCount] = {"int8",  "uint8",  "int32", "uint32",
                                                 "int64", "uint64", "fp16",  "fp32",
                                                 "fp64",  "bf16",   "e4m3",  "e5m2"};
  return names[dtype];
}

bool isIntegerDtype(int dtype) {
  return dtype <= kU64;
}

bool isNarrowFloatDtype(int dtype) {
  return dtype == kF16 || dtype == kBf16 || dtype == kE4M3 || dtype == kE5M2;
}

bool isNan(int dtype, std::uint64_t bits) {
  if (isIntegerDtype(dtype)) return false;
  if (dtype == kF64) return (bits & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
  return formatIsNan(formatOf(dtype), bits);
}

double exactValue(int dtype, std::uint64_t bits) {
  return formatValue(formatOf(dtype), bits);
}

std::uint64_t nearestEncoding(int dtype, float x) {
  if (dtype == kF32) {
    std::uint32_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    return bits;
  }
  if (std::isnan(x)) return canonicalNan(dtype);
  const FloatFormat f = formatOf(dtype);
  const std::uint64_t sign = std::signbit(x) ? 1ull << (totalBits(f) - 1) : 0;
  const double magnitude = std::fabs(static_cast<double>(x));
  const std::vector<double>& values = finiteMagnitudes(dtype);
  const std::uint64_t maxCode = values.size() - 1;
  if (magnitude >= values[maxCode]) {
    if (f.saturates) return sign | maxCode;
    const double halfUlp = (values[maxCode] - values[maxCode - 1]) / 2;
    // The tie at max + half an ulp goes to the even neighbour: the infinity code.
    return sign | (magnitude >= values[maxCode] + halfUlp ? maxCode + 1 : maxCode);
  }
  // values[low] <= magnitude < values[low + 1]
  const std::uint64_t low = static_cast<std::uint64_t>(
      std::upper_bound(values.begin(), values.end(), magnitude) - values.begin() - 1);
  const double below = magnitude - values[low], above = values[low + 1] - magnitude;
  std::uint64_t code = below < above ? low : low + 1;
  if (below == above) code = (low % 2 == 0) ? low : low + 1;
  return sign | code;
}

std::uint64_t referenceElement(const ReduceOp& op, unsigned flags, const std::uint64_t* acc,
                               std::uint64_t local) {
  const bool pre = (flags & kApplyPre) && op.preMul;
  const bool post = (flags & kApplyPost) && op.postDiv > 1;
  if (!acc && !pre && !post) return local;  // a plain copy
  if (isIntegerDtype(op.dtype)) return integerReference(op, pre, post, acc, local);
  if (op.dtype == kF64) return doubleReference(op, pre, post, acc, local);
  return floatReference(op, pre, post, acc, local);
}

bool sameResult(int dtype, std::uint64_t expected, std::uint64_t actual) {
  if (expected == actual) return true;
  return isNan(dtype, expected) && isNan(dtype, actual);
}

std::vector<std::uint64_t> randomElements(int dtype, std::size_t count, std::mt19937_64& rng) {
  std::vector<std::uint64_t> out(count);
  const int width = 8 * static_cast<int>(typeSize(dtype));
  const std::uint64_t mask = width == 64 ? ~0ull : (1ull << width) - 1;
  std::uniform_int_distribution<int> percent(0, 99);
  for (std::uint64_t& e : out) {
    const int p = percent(rng);
    const std::uint64_t bits = rng();
    if (isIntegerDtype(dtype)) {
      e = p < 20 ? (bits % 7) - 3 : bits;  // small values (incl. -1, 0) and random bits
    } else if (dtype == kF64) {
      if (p < 40) {  // moderate: exponent near 0, random mantissa
        e = (bits & 0x800FFFFFFFFFFFFFull) | (static_cast<std::uint64_t>(1020 + bits % 7) << 52);
      } else if (p < 50) {
        static const std::uint64_t specials[] = {0,
                                                 0x8000000000000000ull,
                                                 0x7FF0000000000000ull,
                                                 0xFFF0000000000000ull,
                                                 0x7FF8000000000000ull,
                                                 0x7FF4000000000001ull,
                                                 0x0000000000000001ull,
                                                 0x800FFFFFFFFFFFFFull,
                                                 0x7FEFFFFFFFFFFFFFull,
                                                 0x0010000000000000ull};
        e = specials[bits % (sizeof(specials) / sizeof(specials[0]))];
      } else {
        e = bits;
      }
    } else {
      const FloatFormat f = formatOf(dtype);
      if (p < 40) {  // moderate: exponent within a few binades of 1
        const std::uint64_t exponent = static_cast<std::uint64_t>(f.bias - 2 + (bits >> 32) % 5);
        e = (bits & ((1ull << f.mantissaBits) - 1)) | (exponent << f.mantissaBits) |
            (((bits >> 40) & 1) << (totalBits(f) - 1));
      } else if (p < 50) {  // specials: zeros, smallest subnormal, largest finite, inf, NaN
        const std::uint64_t top = 1ull << (totalBits(f) - 1);
        const std::uint64_t maxCode = maxFiniteCode(f);
        const std::uint64_t specials[] = {0,
                                          top,
                                          1,
                                          top | 1,
                                          maxCode,
                                          top | maxCode,
                                          maxCode + 1,
                                          top | (maxCode + 1),
                                          canonicalNan(dtype)};
        e = specials[bits % (sizeof(specials) / sizeof(specials[0]))];
      } else {
        e = bits;
      }
    }
    e &= mask;
  }
  return out;
}

std::vector<float> roundingProbes(int d) {
  auto fromBits = [](std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  };
  std::vector<float> values;
  for (std::uint64_t bits = 0; bits < (1ull << 32); bits += 4093) {
    values.push_back(fromBits(static_cast<std::uint32_t>(bits)));
  }
  for (std::uint32_t code = 0; code + 1 < (typeSize(d) == 1 ? 128u : 32768u); ++code) {
    const double low = exactValue(d, code), high = exactValue(d, code + 1);
    if (!std::isfinite(low) || !std::isfinite(high)) break;
    const float middle = static_cast<float>((low + high) / 2);  // exact: 1 bit more than format
    for (float v : {static_cast<float>(low), middle, std::nextafter(middle, 0.0f),
                    std::nextafter(middle, INFINITY)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  static const std::uint32_t kSpecialBits[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u,
                                               0x7F800001u, 0xFFA00001u, 0x7F7FFFFFu, 0x00000001u,
                                               0x80000001u, 0x00000000u, 0x80000000u, 0x007FFFFFu};
  for (std::uint32_t bits : kSpecialBits) values.push_back(fromBits(bits));
  // Overflow thresholds of fp16 (65520), e4m3 (464, 480) and e5m2 (61440), with neighbours.
  for (float threshold : {65504.0f, 65520.0f, 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f}) {
    for (float v :
         {std::nextafter(threshold, 0.0f), threshold, std::nextafter(threshold, INFINITY)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  return values;
}

std::uint64_t loadElement(int dtype, const void* base, std::size_t index) {
  const std::size_t size = typeSize(dtype);
  std::uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const unsigned char*>(base) + index * size, size);
  return bits;
}

void storeElement(int dtype, void* base, std::size_t index, std::uint64_t bits) {
  const std::size_t size = typeSize(dtype);
  std::memcpy(static_cast<unsigned char*>(base) + index * size, &bits, size);
}

}  // namespace braid::kernels::testing
