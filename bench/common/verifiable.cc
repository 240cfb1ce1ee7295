#include "verifiable.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "datatypes.h"
#include "verifiable/element_codec.h"
#include "verifiable/exact_inputs.h"

namespace braid::bench {
namespace {

// The shared generator (verifiable/exact_inputs.h) with its default bounds; the op index's
// first five values are ncclRedOp_t's, as are Reduction's, and kOpMulSum is kPreMulSum.
verifiable::ExactInputs generatorOf(const DataSpec& spec) {
  return verifiable::ExactInputs(verifiable::InputSpec{
      spec.type, static_cast<verifiable::Reduction>(spec.opIndex), spec.nranks, spec.seed});
}

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
  static constexpr const braid::FloatFormat& kFormat = braid::dataType(kType).format;
  static T encode(double v) { return static_cast<T>(verifiable::encodeFloat(kFormat, v)); }
  static double decode(T v) { return verifiable::decodeFloat(kFormat, v); }
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

}  // namespace

double inputValue(const DataSpec& spec, int rank, std::size_t index) {
  return generatorOf(spec).value(rank, index);
}

double premulScalar(int rank) {
  return verifiable::premulScalar(verifiable::InputSpec{}, rank);
}

void encodePremulScalar(ncclDataType_t type, int rank, void* scalar8Bytes) {
  std::memset(scalar8Bytes, 0, 8);
  verifiable::storeElement(scalar8Bytes, 0, type, premulScalar(rank));
}

void fillInput(void* buffer, std::size_t count, std::size_t firstIndex, const DataSpec& spec,
               int rank) {
  verifiable::ExactInputs generator = generatorOf(spec);
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
  verifiable::ExactInputs generator = generatorOf(spec);
  const bool average = spec.opIndex == ncclAvg;
  return withCodec(spec.type, [&](auto codec) {
    using Codec = decltype(codec);
    const auto* got = static_cast<const typename Codec::T*>(result);
    std::int64_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      double exact = generator.reduced(firstIndex + i);
      bool right;
      if constexpr (Codec::kIsFloat) {
        // Numeric comparison: +0 equals -0, NaN (the poison) equals nothing.
        double value = Codec::decode(got[i]);
        right = average ? std::fabs(value - exact) <= verifiable::unitInLastPlace(spec.type, exact)
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
  verifiable::ExactInputs generator = generatorOf(spec);
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
