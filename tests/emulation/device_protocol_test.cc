// The device protocol (kernels/device/) run by CPU threads: every channel of every rank is a
// thread running the code nvcc compiles for the GPU. Each case runs a schedule x protocol x rank
// count x channel count through every dtype (sum) and every op on a spread of dtypes, counts 1,
// 7, a prime past several chunks and a larger one, in and out of place, with poisoned outputs.
// The oracle is computed before the launch, from copies of the inputs that the launch never
// sees, so a launch that writes into a send buffer cannot move its own expectation; every input
// differs per rank and per element in every dtype and op (see inputsOf), so a misplaced,
// missing or doubled block changes some element; and every partial result is exact in its
// dtype, whatever the order of the reduction (checked for each element of each float sum), so
// each element is checked bit for bit. Out of place, every send buffer must come back as it
// was; past every buffer a guard of poisoned elements must stay poisoned.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/dispatch.h"
#include "kernels/device/emulation.h"
#include "kernels/ops.h"

namespace braid::kernels::device {
namespace {

constexpr unsigned char kPoison = 0xA5;

// Under ThreadSanitizer (5-15x slower) and AddressSanitizer the sweep keeps every schedule,
// protocol, rank and channel count and every element size, with fewer dtypes, ops and counts.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct Case {
  Collective collective;
  Algorithm algorithm;
  Protocol protocol;
  int nranks;
  int channels;
};

std::string caseName(const testing::TestParamInfo<Case>& info) {
  static const char* collectives[] = {"AllReduce", "Broadcast", "Reduce", "AllGather",
                                      "ReduceScatter"};
  static const char* algorithms[] = {"Ring", "Tree", "OneShot"};
  const Case& c = info.param;
  return std::string(collectives[static_cast<int>(c.collective)]) +
         algorithms[static_cast<int>(c.algorithm)] +
         (c.protocol == Protocol::kLL ? "LL" : "Simple") + "_" + std::to_string(c.nranks) +
         "ranks_" + std::to_string(c.channels) + "channels";
}

/// The user-facing op of a run: the four base ops, avg and premulsum.
enum class UserOp { kSum, kProd, kMax, kMin, kAvg, kPreMulSum };

bool isFloat(int d) {
  return d == dtype::kFloat16 || d == dtype::kFloat32 || d == dtype::kFloat64 ||
         d == dtype::kBfloat16 || d == dtype::kFp8E4M3 || d == dtype::kFp8E5M2;
}

/// splitmix64's finalizer: the inputs' variety, the same on every run.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A draw for rank r's element i of one run (`salt`); rank -1 draws for the element itself.
std::uint64_t draw(std::uint64_t salt, int r, std::size_t i) {
  return mix(mix(salt + static_cast<std::uint64_t>(r + 1)) ^ i);
}

/// The significand bits of a float dtype, its implicit bit included.
int significandBits(int d) {
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
ReduceOp resolve(int d, UserOp op, int nranks) {
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
double quantum(double t) {
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

const char* opName(UserOp op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return names[static_cast<int>(op)];
}

/// Elements past every buffer's end that must stay poisoned.
constexpr std::size_t kGuard = 16;

class DeviceProtocol : public testing::TestWithParam<Case> {
 protected:
  /// Runs one collective of `count` elements of dtype D with `op` and checks every element of
  /// every rank's output, every out-of-place send buffer and every buffer's guard.
  template <int D>
  void runOne(EmulatedWorld& world, UserOp op, std::size_t count, bool inPlace, int root) {
    using S = typename ElementType<D>::Storage;
    const Case& k = GetParam();
    const int n = k.nranks;
    const bool gathers = k.collective == Collective::kAllGather;
    const bool scatters = k.collective == Collective::kReduceScatter;
    const bool copies = gathers || k.collective == Collective::kBroadcast;
    const std::size_t inCount = scatters ? count * n : count;
    const std::size_t outCount = gathers ? count * n : count;
    const std::size_t bufferCount = inPlace ? std::max(inCount, outCount) : outCount;
    const ReduceOp resolved = resolve(D, op, n);
    auto where = [&] {
      return caseName({GetParam(), 0}) + ": dtype " + std::to_string(D) + " op " + opName(op) +
             " count " + std::to_string(count) + (inPlace ? " in place" : " out of place") +
             " root " + std::to_string(root);
    };

    // The inputs, and the oracle from them, before anything is handed to the launch.
    const Draw spec{
        op, n, copies,
        mix((static_cast<std::uint64_t>(D) << 8) + static_cast<std::uint64_t>(op)) + count};
    const std::vector<std::vector<S>> pristine = inputsOf<D>(spec, inCount);
    S poison;
    std::memset(&poison, kPoison, sizeof(S));
    std::vector<S> reduced;
    if (!copies) {
      reduced.resize(inCount);
      std::vector<S> column(n);
      bool inexact = false;
      for (std::size_t i = 0; i < inCount; ++i) {
        for (int q = 0; q < n; ++q) column[q] = pristine[q][i];
        reduced[i] = reference<D>(op, column, resolved, &inexact);
      }
      ASSERT_FALSE(inexact) << where() << ": the inputs' sums could round; the oracle cannot judge";
    }
    std::vector<std::vector<S>> expected(n, std::vector<S>(outCount));
    for (int r = 0; r < n; ++r) {
      for (std::size_t i = 0; i < outCount; ++i) {
        switch (k.collective) {
          case Collective::kAllReduce:
            expected[r][i] = reduced[i];
            break;
          case Collective::kReduceScatter:
            expected[r][i] = reduced[r * count + i];
            break;
          case Collective::kReduce:
            // Only the root's buffer is written; the others keep the poison (out of place) or
            // their input (in place).
            expected[r][i] = r == root ? reduced[i] : inPlace ? pristine[r][i] : poison;
            break;
          case Collective::kBroadcast:
            expected[r][i] = pristine[root][i];
            break;
          case Collective::kAllGather:
            expected[r][i] = pristine[i / count][i % count];
            break;
        }
      }
    }

    // The buffers: copies of the inputs, poisoned outputs, a poisoned guard past each.
    std::vector<std::vector<S>> in(n), out(n);
    std::vector<CollectiveArgs> args(n);
    for (int r = 0; r < n; ++r) {
      in[r].assign(inCount + kGuard, poison);
      out[r].assign(bufferCount + kGuard, poison);
      std::copy(pristine[r].begin(), pristine[r].end(), in[r].begin());
      CollectiveArgs& a = args[r];
      a.collective = k.collective;
      a.algorithm = k.algorithm;
      a.protocol = k.protocol;
      a.root = root;
      a.count = count;
      a.op = resolved;
      a.comm = world.comm(r);
      a.comm.channels = k.channels;
      a.sendbuff = in[r].data();
      a.recvbuff = out[r].data();
      if (inPlace) {
        // NCCL's in-place forms: the same buffer, all-gather's input at its block of the
        // output, reduce-scatter's output at its block of the input.
        std::vector<S>& buffer = out[r];
        const std::size_t at = gathers ? r * count : 0;
        std::copy(pristine[r].begin(), pristine[r].end(), buffer.begin() + at);
        a.sendbuff = buffer.data() + at;
        if (scatters) a.recvbuff = buffer.data() + r * count;
      }
    }
    ASSERT_EQ(world.launch(args), "") << where();

    auto differ = [&](const char* what, int r, std::size_t i, S got, S want) {
      std::uint64_t gotBits = 0, wantBits = 0;
      std::memcpy(&gotBits, &got, sizeof(S));
      std::memcpy(&wantBits, &want, sizeof(S));
      ADD_FAILURE() << where() << ": rank " << r << " " << what << " element " << i << " is "
                    << static_cast<double>(ElementType<D>::load(got)) << " (0x" << std::hex
                    << gotBits << "), expected " << static_cast<double>(ElementType<D>::load(want))
                    << " (0x" << wantBits << std::dec << ")";
    };
    auto same = [](const S& a, const S& b) { return std::memcmp(&a, &b, sizeof(S)) == 0; };
    for (int r = 0; r < n; ++r) {
      const S* result = static_cast<const S*>(args[r].recvbuff);
      for (std::size_t i = 0; i < outCount; ++i)
        if (!same(result[i], expected[r][i]))
          return differ("output", r, i, result[i], expected[r][i]);
      // The send buffer (out of place) comes back as it was.
      if (!inPlace)
        for (std::size_t i = 0; i < inCount; ++i)
          if (!same(in[r][i], pristine[r][i]))
            return differ("send buffer", r, i, in[r][i], pristine[r][i]);
      for (std::size_t g = 0; g < kGuard; ++g) {
        if (!same(out[r][bufferCount + g], poison))
          return differ("guard past the receive buffer", r, g, out[r][bufferCount + g], poison);
        if (!same(in[r][inCount + g], poison))
          return differ("guard past the send buffer", r, g, in[r][inCount + g], poison);
      }
    }
  }

  void runEverything(FifoShape shape, const std::vector<std::size_t>& counts) {
    const Case& k = GetParam();
    EmulatedWorld world(k.nranks, k.channels, shape);
    const bool reduces =
        k.collective != Collective::kBroadcast && k.collective != Collective::kAllGather;
    std::vector<int> roots{0};
    if (k.collective == Collective::kBroadcast || k.collective == Collective::kReduce)
      roots = kSanitized ? std::vector<int>{k.nranks - 1}
                         : std::vector<int>{0, k.nranks - 1, k.nranks / 2};
    std::vector<int> everyDtype,
        spread{dtype::kInt8,     dtype::kUint32,  dtype::kInt64,   dtype::kFloat16,
               dtype::kBfloat16, dtype::kFp8E5M2, dtype::kFloat32, dtype::kFloat64};
    for (int d = 0; d < dtype::kCount; ++d) everyDtype.push_back(d);
    if (kSanitized) {
      everyDtype = {dtype::kInt8, dtype::kFloat16, dtype::kFloat32, dtype::kFloat64};
      spread = {dtype::kBfloat16, dtype::kInt32};
    }
    for (std::size_t count : counts) {
      for (bool inPlace : {false, true}) {
        for (int root : roots) {
          // Every dtype moves through the schedule (sum, or a copy) ...
          for (int d : everyDtype) {
            cuda::withDtypeAndOp(d, BaseOp::kSum, [&]<int D, class Op>() {
              runOne<D>(world, UserOp::kSum, count, inPlace, root);
            });
            if (HasFailure()) return;
          }
          if (!reduces) continue;
          // ... and every op on a spread of widths and formats.
          for (UserOp op :
               {UserOp::kProd, UserOp::kMax, UserOp::kMin, UserOp::kAvg, UserOp::kPreMulSum}) {
            for (int d : spread) {
              cuda::withDtypeAndOp(d, BaseOp::kSum, [&]<int D, class Op>() {
                runOne<D>(world, op, count, inPlace, root);
              });
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
};

// Small slots (512 B Simple, 256 B LL, 2 in flight): every count past a few elements takes
// many chunks and reuses each slot many times. Counts: 1, 7, a prime over several chunks of
// every dtype, and one over many.
TEST_P(DeviceProtocol, EveryDtypeAndOpExact) {
  runEverything(FifoShape{2, 512, 256}, kSanitized ? std::vector<std::size_t>{7, 1031}
                                                   : std::vector<std::size_t>{1, 7, 1031, 4099});
}

std::vector<Case> cases() {
  std::vector<Case> all;
  const std::pair<int, int> shapes[] = {{1, 1}, {2, 1}, {3, 2}, {5, 3}, {8, 4}};
  const std::pair<Collective, Algorithm> schedules[] = {
      {Collective::kAllReduce, Algorithm::kRing},    {Collective::kAllReduce, Algorithm::kTree},
      {Collective::kAllReduce, Algorithm::kOneShot}, {Collective::kReduceScatter, Algorithm::kRing},
      {Collective::kAllGather, Algorithm::kRing},    {Collective::kBroadcast, Algorithm::kRing},
      {Collective::kReduce, Algorithm::kRing}};
  for (auto [collective, algorithm] : schedules) {
    for (Protocol protocol : {Protocol::kSimple, Protocol::kLL}) {
      for (auto [n, channels] : shapes) {
        // One rank once per schedule is enough (no communication).
        if (n == 1 && protocol == Protocol::kLL) continue;
        all.push_back({collective, algorithm, protocol, n, channels});
      }
    }
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Emulation, DeviceProtocol, testing::ValuesIn(cases()), caseName);

}  // namespace
}  // namespace braid::kernels::device
