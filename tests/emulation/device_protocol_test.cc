// The device protocol (kernels/device/) run by CPU threads: every channel of every rank is a
// thread running the code nvcc compiles for the GPU. Each case runs a schedule x protocol x rank
// count x channel count through every dtype (sum) and every op on a spread of dtypes, counts 1,
// 7, a prime past several chunks and a larger one, in and out of place, with poisoned outputs,
// against a reference computed from the inputs in float64 / 64-bit integers. The inputs are
// chosen so that every partial result is exact in its dtype, whatever the order of the
// reduction, so each element is checked exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
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
bool isUnsigned(int d) {
  return d == dtype::kUint8 || d == dtype::kUint32 || d == dtype::kUint64;
}

/// Rank r's element i, as an exact small number: partial sums of up to 8 ranks stay exact in
/// fp8 (|x| <= 1 there), products are +-powers of two. A float avg's inputs are nranks times
/// that, so that each rank's premultiplied term (x * (dtype)(1/n), rounded) is the small number.
double inputValue(int d, UserOp op, int r, std::size_t i, int nranks) {
  if (op == UserOp::kAvg && isFloat(d)) return nranks * inputValue(d, UserOp::kSum, r, i, 1);
  if (op == UserOp::kProd)
    return (i + r) % 3 == 0 ? 2 : ((i * (r + 1)) % 2 ? -1 : 1);  // unsigned: -1 is all ones
  const bool narrow = d == dtype::kFp8E4M3 || d == dtype::kFp8E5M2;
  const long span = narrow ? 3 : 5;  // values -1..1 or -2..2 (0..2 unsigned)
  long v = static_cast<long>((i * 7 + r * 3 + i / 5) % span) - span / 2;
  if (isUnsigned(d)) v = static_cast<long>((i * 7 + r * 3) % 3);
  return static_cast<double>(v);
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

/// Storage bits of value x in dtype D, and a value back from bits.
template <int D>
typename ElementType<D>::Storage toStorage(double x) {
  using E = ElementType<D>;
  if constexpr (std::is_integral_v<typename E::Compute>) {
    return static_cast<typename E::Storage>(static_cast<std::int64_t>(x));
  } else {
    return E::store(static_cast<typename E::Compute>(x));
  }
}

/// The reference of one element over the ranks' values (exact by construction).
template <int D>
typename ElementType<D>::Storage reference(UserOp op, const std::vector<double>& values,
                                           const ReduceOp& resolved) {
  using E = ElementType<D>;
  using C = typename E::Compute;
  const bool floatAvg = op == UserOp::kAvg && isFloat(D);
  const double scale = op == UserOp::kPreMulSum ? (isFloat(D) ? 0.5 : 2) : 1;
  // A float avg's term: x times the resolved scalar, rounded to the dtype (NCCL's premulsum).
  auto term = [&](double x) {
    if (!floatAvg) return x * scale;
    typename E::Storage scalarBits;
    std::memcpy(&scalarBits, resolved.scalar, sizeof(scalarBits));
    return static_cast<double>(E::load(E::store(static_cast<C>(x * E::load(scalarBits)))));
  };
  double acc = term(values[0]);
  for (std::size_t k = 1; k < values.size(); ++k) {
    const double v = term(values[k]);
    if (op == UserOp::kProd)
      acc *= v;
    else if (op == UserOp::kMax)
      acc = v > acc ? v : acc;
    else if (op == UserOp::kMin)
      acc = v < acc ? v : acc;
    else
      acc += v;
  }
  if constexpr (std::is_integral_v<C>) {
    // Integers wrap in their own width (products of +-2 overflow int8); avg truncates.
    const auto wrapped = static_cast<C>(static_cast<std::int64_t>(acc));
    if (op == UserOp::kAvg)
      return static_cast<typename E::Storage>(wrapped / static_cast<C>(values.size()));
    return static_cast<typename E::Storage>(wrapped);
  } else {
    return E::store(static_cast<C>(acc));
  }
}

class DeviceProtocol : public testing::TestWithParam<Case> {
 protected:
  /// Runs one collective of `count` elements of dtype D with `op` and checks every element of
  /// every rank's output.
  template <int D>
  void runOne(EmulatedWorld& world, UserOp op, std::size_t count, bool inPlace, int root) {
    using S = typename ElementType<D>::Storage;
    const Case& k = GetParam();
    const int n = k.nranks;
    const bool gathers = k.collective == Collective::kAllGather;
    const bool scatters = k.collective == Collective::kReduceScatter;
    const std::size_t inCount = scatters ? count * n : count;
    const std::size_t outCount = gathers ? count * n : count;
    std::vector<std::vector<S>> in(n), out(n);
    std::vector<std::vector<double>> values(n);
    for (int r = 0; r < n; ++r) {
      values[r].resize(inCount);
      in[r].resize(inCount);
      for (std::size_t i = 0; i < inCount; ++i) {
        values[r][i] = inputValue(D, op, r, i, n);
        in[r][i] = toStorage<D>(values[r][i]);
      }
      out[r].assign(inPlace ? std::max(inCount, outCount) : outCount, S{});
      std::memset(out[r].data(), kPoison, out[r].size() * sizeof(S));
    }
    std::vector<CollectiveArgs> args(n);
    for (int r = 0; r < n; ++r) {
      CollectiveArgs& a = args[r];
      a.collective = k.collective;
      a.algorithm = k.algorithm;
      a.protocol = k.protocol;
      a.root = root;
      a.count = count;
      a.op = resolve(D, op, n);
      a.comm = world.comm(r);
      a.comm.channels = k.channels;
      a.sendbuff = in[r].data();
      a.recvbuff = out[r].data();
      if (inPlace) {
        // NCCL's in-place forms: the same buffer, all-gather's input at its block of the
        // output, reduce-scatter's output at its block of the input.
        std::vector<S>& buffer = out[r];
        if (gathers) {
          std::copy(in[r].begin(), in[r].end(), buffer.begin() + r * count);
          a.sendbuff = buffer.data() + r * count;
        } else if (scatters) {
          std::copy(in[r].begin(), in[r].end(), buffer.begin());
          a.sendbuff = buffer.data();
          a.recvbuff = buffer.data() + r * count;
        } else {
          std::copy(in[r].begin(), in[r].end(), buffer.begin());
          a.sendbuff = buffer.data();
        }
      }
    }
    ASSERT_EQ(world.launch(args), "") << "dtype " << D << " count " << count;
    std::vector<double> column(n);
    for (int r = 0; r < n; ++r) {
      const S* result = static_cast<const S*>(args[r].recvbuff);
      for (std::size_t i = 0; i < outCount; ++i) {
        S expected{};
        switch (k.collective) {
          case Collective::kAllReduce:
          case Collective::kReduce:
          case Collective::kReduceScatter: {
            const std::size_t at = scatters ? r * count + i : i;
            for (int q = 0; q < n; ++q) column[q] = values[q][at];
            expected = reference<D>(op, column, args[r].op);
            // Reduce: only the root's buffer is written; the others keep the poison (out of
            // place) or their input (in place).
            if (k.collective == Collective::kReduce && r != root) {
              if (inPlace)
                expected = in[r][i];
              else
                std::memset(&expected, kPoison, sizeof(S));
            }
            break;
          }
          case Collective::kBroadcast:
            expected = in[root][i];
            break;
          case Collective::kAllGather:
            expected = in[i / count][i % count];
            break;
        }
        if (std::memcmp(&result[i], &expected, sizeof(S)) != 0) {
          ADD_FAILURE() << caseName({GetParam(), 0}) << ": dtype " << D << " op "
                        << static_cast<int>(op) << " count " << count
                        << (inPlace ? " in place" : " out of place") << " root " << root
                        << ": rank " << r << " element " << i << " is "
                        << static_cast<double>(ElementType<D>::load(result[i])) << ", expected "
                        << static_cast<double>(ElementType<D>::load(expected));
          return;
        }
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
