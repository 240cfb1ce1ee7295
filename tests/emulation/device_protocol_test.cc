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
#include "tests/emulation/protocol_inputs.h"

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
  static const char* protocolNames[] = {"Simple", "LL", "LL128"};
  const Case& c = info.param;
  return std::string(collectives[static_cast<int>(c.collective)]) +
         algorithms[static_cast<int>(c.algorithm)] + protocolNames[static_cast<int>(c.protocol)] +
         "_" + std::to_string(c.nranks) + "ranks_" + std::to_string(c.channels) + "channels";
}

using namespace protocol_test;  // UserOp, the inputs and the reference

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

// Small slots (512 B Simple, 256 B LL, two 128-byte lines of LL128, 2 in flight): every count
// past a few elements takes many chunks and reuses each slot many times. Counts: 1, 7, a prime
// over several chunks of every dtype, and one over many.
TEST_P(DeviceProtocol, EveryDtypeAndOpExact) {
  runEverything(FifoShape{2, 512, 256, 256}, kSanitized
                                                 ? std::vector<std::size_t>{7, 1031}
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
    for (Protocol protocol : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
      for (auto [n, channels] : shapes) {
        // One rank once per schedule is enough (no communication).
        if (n == 1 && protocol != Protocol::kSimple) continue;
        all.push_back({collective, algorithm, protocol, n, channels});
      }
    }
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(Emulation, DeviceProtocol, testing::ValuesIn(cases()), caseName);

}  // namespace
}  // namespace braid::kernels::device
