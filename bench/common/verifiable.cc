#include "verifiable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "datatypes.h"

namespace braid::bench {
namespace {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Exactness limits of a type: every integer in [-sumBound, sumBound] is representable (and no
// integer result can reach the poison value), and 2^maxDoublings is representable.
struct Limits {
  std::int64_t sumBound;
  int maxDoublings;
};

Limits limitsOf(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
      return {126, 6};
    case ncclUint8:
      return {254, 7};
    case ncclInt32:
      return {std::int64_t{1} << 30, 30};
    case ncclUint32:
      return {std::int64_t{1} << 31, 31};
    case ncclInt64:
      return {std::int64_t{1} << 40, 62};
    case ncclUint64:
      return {std::int64_t{1} << 40, 63};
    case ncclFloat16:
      return {2048, 15};
    case ncclFloat32:
      return {std::int64_t{1} << 24, 60};
    case ncclFloat64:
      return {std::int64_t{1} << 53, 60};
    case ncclBfloat16:
      return {256, 60};
    case ncclFloat8e4m3:
      return {16, 8};
    case ncclFloat8e5m2:
      return {8, 15};
    default:
      return {1, 0};
  }
}

// Keeps generated numbers readable and the sums far from any 64-bit limit.
constexpr std::int64_t kMaxAmplitude = 100000;

enum class Shape { kSumLike, kProduct, kMinMax };

// The value recipe of one (type, op, nranks, seed): precomputed once per buffer.
class Generator {
 public:
  explicit Generator(const DataSpec& spec) : isSigned_(typeInfo(spec.type).isSigned) {
    Limits limits = limitsOf(spec.type);
    std::int64_t n = spec.nranks;
    switch (spec.opIndex) {
      case ncclProd:
        shape_ = Shape::kProduct;
        // At most maxDoublings ranks contribute a factor 2 to any element.
        stride_ = std::max<std::int64_t>(
            1, (n + limits.maxDoublings - 1) / std::max(1, limits.maxDoublings));
        break;
      case ncclMax:
      case ncclMin:
        shape_ = Shape::kMinMax;
        amplitude_ = std::min(limits.sumBound, kMaxAmplitude);
        break;
      default: {  // sum, avg, mulsum: |partial sums| <= sumBound in any order
        shape_ = Shape::kSumLike;
        std::int64_t weight = n * (spec.opIndex == kOpMulSum ? 2 : 1);
        if (weight <= limits.sumBound) {
          amplitude_ = std::min(limits.sumBound / weight, kMaxAmplitude);
        } else {
          // More ranks than the type can sum exactly: only some ranks contribute (+-1) to each
          // element, at most sumBound / scalar of them.
          amplitude_ = 1;
          stride_ = (weight + limits.sumBound - 1) / limits.sumBound;
        }
      }
    }
    rankKeys_.resize(static_cast<std::size_t>(spec.nranks));
    for (int r = 0; r < spec.nranks; ++r) {
      rankKeys_[r] = mix64(spec.seed * 0x100000001b3ull + static_cast<std::uint64_t>(r) + 1);
    }
  }

  double value(int rank, std::size_t index) const {
    std::uint64_t h = mix64(index + rankKeys_[rank]);
    bool onStride = stride_ == 1 || (index + static_cast<std::size_t>(rank)) % stride_ == 0;
    switch (shape_) {
      case Shape::kProduct: {
        double factor = (onStride && (h & 1)) ? 2 : 1;
        return (isSigned_ && (h & 2)) ? -factor : factor;
      }
      case Shape::kMinMax:
        return uniform(h);
      case Shape::kSumLike:
      default:
        if (!onStride) return 0;
        return uniform(h);
    }
  }

 private:
  double uniform(std::uint64_t h) const {
    std::uint64_t a = static_cast<std::uint64_t>(amplitude_);
    if (!isSigned_) return static_cast<double>(h % (a + 1));
    return static_cast<double>(static_cast<std::int64_t>(h % (2 * a + 1)) - amplitude_);
  }

  bool isSigned_;
  Shape shape_ = Shape::kSumLike;
  std::int64_t amplitude_ = 1;
  std::int64_t stride_ = 1;
  std::vector<std::uint64_t> rankKeys_;
};

// Storage and exact conversions of one element type.
template <typename Storage>
struct IntCodec {
  using T = Storage;
  static T encode(double v) { return static_cast<T>(v); }
  static double decode(T v) { return static_cast<double>(v); }
  static constexpr bool kIsFloat = false;
};

template <typename Storage>
struct NativeFloatCodec {
  using T = Storage;
  static T encode(double v) { return static_cast<T>(v); }
  static double decode(T v) { return static_cast<double>(v); }
  static constexpr bool kIsFloat = true;
};

template <typename Storage, ncclDataType_t kType>
struct SmallFloatCodec {
  using T = Storage;
  static constexpr const FloatFormat& kFormat = kernels::dataType(kType).format;
  static T encode(double v) { return static_cast<T>(encodeFloat(kFormat, v)); }
  static double decode(T v) { return decodeFloat(kFormat, v); }
  static constexpr bool kIsFloat = true;
};

template <typename Visitor>
auto withCodec(ncclDataType_t type, Visitor&& visit) {
  switch (type) {
    case ncclInt8:
      return visit(IntCodec<std::int8_t>{});
    case ncclUint8:
      return visit(IntCodec<std::uint8_t>{});
    case ncclInt32:
      return visit(IntCodec<std::int32_t>{});
    case ncclUint32:
      return visit(IntCodec<std::uint32_t>{});
    case ncclInt64:
      return visit(IntCodec<std::int64_t>{});
    case ncclUint64:
      return visit(IntCodec<std::uint64_t>{});
    case ncclFloat16:
      return visit(SmallFloatCodec<std::uint16_t, ncclFloat16>{});
    case ncclFloat64:
      return visit(NativeFloatCodec<double>{});
    case ncclBfloat16:
      return visit(SmallFloatCodec<std::uint16_t, ncclBfloat16>{});
    case ncclFloat8e4m3:
      return visit(SmallFloatCodec<std::uint8_t, ncclFloat8e4m3>{});
    case ncclFloat8e5m2:
      return visit(SmallFloatCodec<std::uint8_t, ncclFloat8e5m2>{});
    case ncclFloat32:
    default:
      return visit(NativeFloatCodec<float>{});
  }
}

// The exact reduction over all ranks at one element (avg before its final rounding).
double reducedValue(const Generator& generator, const DataSpec& spec, std::size_t index) {
  double acc = generator.value(0, index);
  if (spec.opIndex == kOpMulSum) acc *= premulScalar(0);
  for (int r = 1; r < spec.nranks; ++r) {
    double v = generator.value(r, index);
    switch (spec.opIndex) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      case kOpMulSum:
        acc += premulScalar(r) * v;
        break;
      default:
        acc += v;
        break;  // sum, avg
    }
  }
  return acc;
}

}  // namespace

double inputValue(const DataSpec& spec, int rank, std::size_t index) {
  return Generator(spec).value(rank, index);
}

double premulScalar(int rank) {
  return (rank & 1) ? 2.0 : 1.0;
}

void encodePremulScalar(ncclDataType_t type, int rank, void* scalar8Bytes) {
  std::memset(scalar8Bytes, 0, 8);
  storeElement(scalar8Bytes, 0, type, premulScalar(rank));
}

void fillInput(void* buffer, std::size_t count, std::size_t firstIndex, const DataSpec& spec,
               int rank) {
  Generator generator(spec);
  withCodec(spec.type, [&](auto codec) {
    using Codec = decltype(codec);
    auto* out = static_cast<typename Codec::T*>(buffer);
    for (std::size_t i = 0; i < count; ++i) {
      out[i] = Codec::encode(generator.value(rank, firstIndex + i));
    }
  });
}

void poisonOutput(void* buffer, std::size_t count, ncclDataType_t type) {
  const TypeInfo& info = typeInfo(type);
  if (info.isFloat || !info.isSigned) {
    std::memset(buffer, 0xff, count * info.size);  // NaN, or the unsigned maximum
    return;
  }
  withCodec(type, [&](auto codec) {
    using T = typename decltype(codec)::T;
    std::fill_n(static_cast<T*>(buffer), count, std::numeric_limits<T>::min());
  });
}

std::int64_t countOverwritten(const void* buffer, std::size_t count, ncclDataType_t type) {
  const std::size_t size = typeInfo(type).size;
  unsigned char poison[8];
  poisonOutput(poison, 1, type);
  const auto* bytes = static_cast<const unsigned char*>(buffer);
  std::int64_t overwritten = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (std::memcmp(bytes + i * size, poison, size) != 0) ++overwritten;
  }
  return overwritten;
}

std::int64_t countWrongReduced(const void* result, std::size_t count, std::size_t firstIndex,
                               const DataSpec& spec) {
  Generator generator(spec);
  const bool average = spec.opIndex == ncclAvg;
  return withCodec(spec.type, [&](auto codec) {
    using Codec = decltype(codec);
    const auto* got = static_cast<const typename Codec::T*>(result);
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      double exact = reducedValue(generator, spec, firstIndex + i);
      if (average) exact /= spec.nranks;
      bool right;
      if constexpr (Codec::kIsFloat) {
        // Numeric comparison: +0 equals -0, NaN (the poison) equals nothing.
        double value = Codec::decode(got[i]);
        right = average ? std::fabs(value - exact) <= unitInLastPlace(spec.type, exact)
                        : value == exact;
      } else {
        // Integer avg is the sum divided and truncated toward zero; compare in the element
        // type, which is exact for every width.
        right = got[i] == Codec::encode(average ? std::trunc(exact) : exact);
      }
      if (!right) ++wrong;
    }
    return wrong;
  });
}

std::int64_t countWrongCopied(const void* result, std::size_t count, std::size_t firstIndex,
                              const DataSpec& spec, int sourceRank) {
  Generator generator(spec);
  return withCodec(spec.type, [&](auto codec) {
    using Codec = decltype(codec);
    const auto* got = static_cast<const typename Codec::T*>(result);
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      double expected = generator.value(sourceRank, firstIndex + i);
      if constexpr (Codec::kIsFloat) {
        if (!(Codec::decode(got[i]) == expected)) ++wrong;
      } else {
        if (got[i] != Codec::encode(expected)) ++wrong;
      }
    }
    return wrong;
  });
}

}  // namespace braid::bench
