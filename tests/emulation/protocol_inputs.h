// The emulation sweep's inputs and reference (device_protocol_test.cc): each rank's values per
// dtype and op, drawn so that they differ per rank and per element and every partial result stays
// exact in any order, and the expected result computed from copies of them.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cuda/dispatch.h"
#include "kernels/ops.h"

namespace braid::kernels::device::protocol_test {

/// The user-facing op of a run: the four base ops, avg and premulsum.
enum class UserOp { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

inline bool isFloat(int d) {
  return d == dtype::kFloat16 || d == dtype::kFloat32 || d == dtype::kFloat64 ||
         d == dtype::kBfloat16 || d == dtype::kFp8E4M3 || d == dtype::kFp8E5M2;
}

/// splitmix64's finalizer: the inputs' variety, the same on every run.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A draw for rank r's element i of one run (`salt`); rank -1 draws for the element itself.
inline std::uint64_t draw(std::uint64_t salt, int r, std::size_t i) {
  return mix(mix(salt + static_cast<std::uint64_t>(r + 1)) ^ i);
}

/// The significand bits of a float dtype, its implicit bit included.
inline int significandBits(int d) {
  switch (d) {
    case dtype::kFloat64:
      return 53;
    case dtype::kFloat32:
      return 24;
    case dtype::kFloat16:
      return 11;
    case dtype::kBfloat16:
      return 8;
    case dtype::kFp8E4M3:
      return 4;
    default:
      return 3;  // fp8 E5M2
  }
}

/// What one run's inputs are drawn for.
struct Draw {
  UserOp op;
  int nranks;
  bool copies;  ///< broadcast, all-gather: the bits only move
  std::uint64_t salt;
};

/// Every rank's `count` inputs of one run: differing per rank and per element in every dtype and
/// op, each exact in its dtype, with every partial result exact too whatever the order of the
/// reduction (reference() checks the float sums of each element).
///  - Copies, and integers but for products: any bits (integers wrap in their width, in any
///    order).
///  - Integer products: any odd number (odd numbers are a group under multiplication modulo
///    2^w, so a product never collapses to 0, and a missing, doubled or swapped factor other
///    than 1 changes it).
///  - Float max and min: the ranks of an element hold n different values, (offset + 1 .. offset
///    + n) times the element's sign and power of two, dealt in an order drawn per element, so
///    the winner varies by rank and element and every value is exact (offset + n <= 2^p).
///  - Float products: +-1/2, +-1, +-2 (exact powers of two).
///  - Float sums (sum, premulsum): integers k with |k| <= 2^p / n times the element's power of
///    two, so that the magnitudes of any subset of the n terms add up to at most 2^p units: at 8
///    ranks fp8 E5M2 holds -1..1 (at 5 too), E4M3 -2..2, bf16 -32..32, fp16 -256..256, float and
///    double far more.
///  - Float avg: n times -2..2 (-1..1 in fp8), so that each rank's premultiplied term, x times
///    (dtype)(1/n) rounded to the dtype, is a small number again (NCCL's premulsum).
template <int D>
std::vector<std::vector<typename ElementType<D>::Storage>> inputsOf(const Draw& d,
                                                                    std::size_t count) {
  using E = ElementType<D>;
  using S = typename E::Storage;
  using C = typename E::Compute;
  const int n = d.nranks;
  std::vector<std::vector<S>> in(n, std::vector<S>(count));
  std::vector<std::uint64_t> h(n);
  for (std::size_t i = 0; i < count; ++i) {
    for (int r = 0; r < n; ++r) h[r] = draw(d.salt, r, i);
    const std::uint64_t element = draw(d.salt, -1, i);
    for (int r = 0; r < n; ++r) {
      std::uint64_t bits = h[r];
      if (d.copies || std::is_integral_v<C>) {
        if (d.op == UserOp::kProd && !d.copies) bits |= 1;
        std::memcpy(&in[r][i], &bits, sizeof(S));
        continue;
      }
      const int p = significandBits(D);
      int scale = static_cast<int>(element % 7) - 3;  // the element's power of two, 2^-3 .. 2^3
      double x = 0;
      switch (d.op) {
        case UserOp::kMax:
        case UserOp::kMin: {
          int key = 0;  // r's place among the element's draws
          for (int q = 0; q < n; ++q) key += h[q] < h[r] || (h[q] == h[r] && q < r);
          const std::uint64_t room = (std::uint64_t{1} << std::min(p, 20)) - n;
          const std::uint64_t offset = (element >> 8) % (room + 1);
          x = (element & 8 ? -1.0 : 1.0) * static_cast<double>(offset + key + 1);
          break;
        }
        case UserOp::kProd:
          scale = 0;  // n factors of one element's power would leave fp8's range
          x = (bits & 1 ? -1.0 : 1.0) * std::ldexp(1.0, static_cast<int>((bits >> 1) % 3) - 1);
          break;
        case UserOp::kAvg: {
          const std::uint64_t span = p <= 4 ? 1 : 2;
          x = n * (static_cast<double>((bits >> 1) % (2 * span + 1)) - static_cast<double>(span));
          break;
        }
        default: {
          const std::uint64_t span = (std::uint64_t{1} << std::min(p, 40)) / n;
          x = static_cast<double>((bits >> 1) % (2 * span + 1)) - static_cast<double>(span);
          break;
        }
      }
      in[r][i] = E::store(static_cast<C>(std::ldexp(x, scale)));
    }
  }
  return in;
}

/// The user op as the kernels take it (ncclAvg as NCCL resolves it: integers sum and divide at
/// the end, floats premultiply by (dtype)(1/n), through float but for fp64; premulsum by 2 for
/// integers and 0.5 for floats).
inline ReduceOp resolve(int d, UserOp op, int nranks) {
  ReduceOp r;
  r.dtype = d;
  switch (op) {
    case UserOp::kSum:
      r.op = BaseOp::kSum;
      break;
    case UserOp::kProd:
      r.op = BaseOp::kProd;
      break;
    case UserOp::kMax:
      r.op = BaseOp::kMax;
      break;
    case UserOp::kMin:
      r.op = BaseOp::kMin;
      break;
    case UserOp::kAvg:
      r.op = BaseOp::kSum;
      if (isFloat(d))
        r.preMul = true;
      else
        r.postDiv = static_cast<std::uint32_t>(nranks);
      break;
    case UserOp::kPreMulSum:
      r.op = BaseOp::kSum;
      r.preMul = true;
      break;
  }
  if (r.preMul) {
    const double inverse = 1.0 / nranks;
    const double avgScalar = d == dtype::kFloat64 ? inverse : static_cast<float>(inverse);
    const double scalar = op == UserOp::kAvg ? avgScalar : (isFloat(d) ? 0.5 : 2);
    cuda::withDtypeAndOp(d, BaseOp::kSum, [&]<int D, class Op>() {
      using E = ElementType<D>;
      const auto bits = E::store(static_cast<typename E::Compute>(scalar));
      std::memcpy(r.scalar, &bits, sizeof(bits));
    });
  }
  return r;
}

/// The lowest power of two that divides t (t != 0, finite).
inline double quantum(double t) {
  int exponent = 0;
  const double m = std::frexp(std::fabs(t), &exponent);  // |t| = m 2^exponent, m in [0.5, 1)
  const auto bits = static_cast<std::uint64_t>(std::ldexp(m, 53));
  return std::ldexp(1.0, exponent - 53 + std::countr_zero(bits));
}

/// The reference of one element over the ranks' inputs `column`. Integers wrap in their width
/// (computed modulo 2^64, then truncated); floats are computed in double, exactly: a float sum
/// whose terms could round in some order sets `inexact` (the inputs, not the kernels, are then
/// wrong).
template <int D>
typename ElementType<D>::Storage reference(
    UserOp op, const std::vector<typename ElementType<D>::Storage>& column,
    const ReduceOp& resolved, bool* inexact) {
  using E = ElementType<D>;
  using S = typename E::Storage;
  using C = typename E::Compute;
  const std::size_t n = column.size();
  if constexpr (std::is_integral_v<C>) {
    using U = std::uint64_t;
    U acc = static_cast<U>(column[0]) * (op == UserOp::kPreMulSum ? 2 : 1);
    for (std::size_t k = 1; k < n; ++k) {
      const U v = static_cast<U>(column[k]);
      if (op == UserOp::kProd)
        acc *= v;
      else if (op == UserOp::kMax)
        acc = column[k] > static_cast<S>(acc) ? v : acc;
      else if (op == UserOp::kMin)
        acc = column[k] < static_cast<S>(acc) ? v : acc;
      else
        acc += op == UserOp::kPreMulSum ? 2 * v : v;
    }
    const S wrapped = static_cast<S>(acc);
    if (op == UserOp::kAvg) {
      if constexpr (std::is_signed_v<S>)
        return static_cast<S>(static_cast<long long>(wrapped) / static_cast<long long>(n));
      else
        return static_cast<S>(static_cast<unsigned long long>(wrapped) / n);
    }
    return wrapped;
  } else {
    // A float avg's term: x times the resolved scalar, rounded to the dtype (NCCL's premulsum).
    S scalarBits;
    std::memcpy(&scalarBits, resolved.scalar, sizeof(scalarBits));
    auto term = [&](S bits) {
      const double x = static_cast<double>(E::load(bits));
      if (op == UserOp::kPreMulSum) return x * 0.5;
      if (op != UserOp::kAvg) return x;
      return static_cast<double>(E::load(E::store(static_cast<C>(x * E::load(scalarBits)))));
    };
    double acc = term(column[0]);
    double magnitude = std::fabs(acc), unit = acc != 0 ? quantum(acc) : 0;
    for (std::size_t k = 1; k < n; ++k) {
      const double v = term(column[k]);
      if (op == UserOp::kProd) {
        acc *= v;
      } else if (op == UserOp::kMax) {
        acc = v > acc ? v : acc;
      } else if (op == UserOp::kMin) {
        acc = v < acc ? v : acc;
      } else {
        acc += v;
        magnitude += std::fabs(v);
        if (v != 0) unit = unit == 0 ? quantum(v) : std::min(unit, quantum(v));
      }
    }
    // Every partial sum, in any order, is a multiple of `unit` of at most `magnitude`: exact
    // when that is at most 2^p units.
    if (magnitude > std::ldexp(unit, significandBits(D))) *inexact = true;
    return E::store(static_cast<C>(acc));
  }
}

}  // namespace braid::kernels::device::protocol_test
