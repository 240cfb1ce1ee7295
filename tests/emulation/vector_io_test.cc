// The data loops of the device primitives (kernels/device/vector_io.h) with the block sizes the
// GPU runs. The emulation runs every block as one thread; here each of a block's T threads runs
// its share of a copy or reduce one after another (the loops never synchronise inside), so the
// test sees what the GPU's threads would write together: every byte in range exactly once and
// nothing outside it, for every head, body and tail the buffers' offsets make.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/device/vector_io.h"
#include "kernels/ops.h"

namespace braid::kernels::device {
namespace {

constexpr int kThreadCounts[] = {1, 3, 32, 256, 512};
constexpr std::size_t kVectorGuard =
    64;  // bytes before and after every buffer that must stay poisoned
constexpr unsigned char kVectorPoison = 0xA5;

/// The sizes a block's loops split differently: empty, below one pack, around one pack, around
/// one unrolled round of the block, primes.
std::vector<std::size_t> sizesFor(int threads) {
  const std::size_t round = 16 * kUnroll * static_cast<std::size_t>(threads);
  return {0, 1, 7, 15, 16, 17, 63, 64, 65, 127, round - 1, round, round + 17, 3 * round + 5, 10007};
}

/// A buffer with poisoned guards on both sides and its data starting `offset` bytes past a
/// 64-byte boundary.
struct Guarded {
  std::vector<unsigned char> storage;
  std::size_t offset;
  Guarded(std::size_t bytes, std::size_t offset_)
      : storage(bytes + 2 * kVectorGuard + 64 + 64, kVectorPoison), offset(offset_) {}
  unsigned char* data() {
    const auto base = reinterpret_cast<std::uintptr_t>(storage.data()) + kVectorGuard;
    return reinterpret_cast<unsigned char*>((base + 63) / 64 * 64 + offset);
  }
  /// Whether the guards (every byte outside [data, data + bytes)) still hold the poison.
  bool guardsIntact(std::size_t bytes) {
    const unsigned char* d = data();
    for (std::size_t i = 0; i < storage.size(); ++i) {
      const unsigned char* at = storage.data() + i;
      if ((at < d || at >= d + bytes) && *at != kVectorPoison) return false;
    }
    return true;
  }
};

/// memcmp's verdict, for any n: an empty vector's data() may be null, which memcmp may not take.
bool sameBytes(const void* a, const void* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

unsigned char byteAt(std::size_t i, int salt) {
  return static_cast<unsigned char>((i * 131 + static_cast<std::size_t>(salt) * 29 + i / 251) &
                                    0xff);
}

struct Offsets {
  std::size_t src, dst, dst2;
  bool second;
};

TEST(VectorIo, EveryThreadOfABlockCopiesItsShareAndTogetherTheyCopyEveryByteOnce) {
  // Shared misalignments (packs with a head and a tail), misalignments that differ (single
  // bytes), with and without a second destination.
  const Offsets offsets[] = {{0, 0, 0, false},   {0, 0, 0, true}, {3, 3, 3, true},
                             {8, 8, 0, false},   {8, 8, 8, true}, {0, 4, 0, false},
                             {15, 15, 15, true}, {5, 5, 6, true}, {1, 2, 3, false}};
  for (const int threads : kThreadCounts) {
    for (const Offsets& o : offsets) {
      for (const std::size_t bytes : sizesFor(threads)) {
        Guarded src(bytes, o.src), dst(bytes, o.dst), dst2(bytes, o.dst2);
        for (std::size_t i = 0; i < bytes; ++i) src.data()[i] = byteAt(i, threads);
        std::vector<unsigned char> expected(src.data(), src.data() + bytes);
        for (int t = 0; t < threads; ++t)
          copyBytes(Block{t, threads}, dst.data(), o.second ? dst2.data() : nullptr, src.data(),
                    bytes);
        SCOPED_TRACE(testing::Message() << threads << " threads, " << bytes << " bytes, offsets "
                                        << o.src << "/" << o.dst << "/" << o.dst2);
        ASSERT_TRUE(sameBytes(dst.data(), expected.data(), bytes));
        ASSERT_TRUE(dst.guardsIntact(bytes));
        ASSERT_TRUE(sameBytes(src.data(), expected.data(), bytes));  // the source is untouched
        if (o.second) {
          ASSERT_TRUE(sameBytes(dst2.data(), expected.data(), bytes));
          ASSERT_TRUE(dst2.guardsIntact(bytes));
        } else {
          ASSERT_TRUE(dst2.guardsIntact(0));
        }
      }
    }
  }
}

/// The element loop's oracle: acc[i] OP local[i] for every i, as ReduceElement computes one
/// element (tested against an independent reference in tests/kernels); what is checked here is
/// that the loops pair the right elements and apply each exactly once.
template <int D, class Op>
void checkReduce(bool withAcc, bool inPlace, bool second) {
  using S = typename ElementType<D>::Storage;
  constexpr std::size_t kSize = sizeof(S);
  cuda::ElementParams<D> p{};
  p.hasAcc = withAcc;
  p.divisor = 1;
  // Element offsets: aligned, a shared head, and misaligned against each other.
  const std::size_t elementOffsets[][3] = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {0, 1, 0}, {2, 0, 1}};
  for (const int threads : kThreadCounts) {
    for (const auto& eo : elementOffsets) {
      for (const std::size_t n : sizesFor(threads)) {
        Guarded local(n * kSize, eo[0] * kSize), acc(n * kSize, eo[1] * kSize),
            out(n * kSize, eo[2] * kSize), out2(n * kSize, eo[2] * kSize);
        S* l = reinterpret_cast<S*>(local.data());
        S* a = reinterpret_cast<S*>(acc.data());
        // Values that differ per element and per operand, small enough to stay exact.
        for (std::size_t i = 0; i < n; ++i) {
          l[i] = ElementType<D>::store(static_cast<typename ElementType<D>::Compute>(i % 7 + 1));
          a[i] = ElementType<D>::store(static_cast<typename ElementType<D>::Compute>(i % 5 + 2));
        }
        std::vector<S> expected(n);
        for (std::size_t i = 0; i < n; ++i)
          expected[i] = cuda::ReduceElement<D, Op>::apply(p, withAcc ? a[i] : S{}, l[i]);
        S* o = inPlace ? a : reinterpret_cast<S*>(out.data());
        S* o2 = second ? reinterpret_cast<S*>(out2.data()) : nullptr;
        for (int t = 0; t < threads; ++t)
          reduceElements<D, Op>(Block{t, threads}, p, o, o2, withAcc ? a : nullptr, l, n);
        SCOPED_TRACE(testing::Message()
                     << "dtype " << D << ", " << threads << " threads, " << n
                     << " elements, offsets " << eo[0] << "/" << eo[1] << "/" << eo[2]
                     << (withAcc ? ", acc" : "") << (inPlace ? ", in place" : "")
                     << (second ? ", two outputs" : ""));
        ASSERT_TRUE(sameBytes(o, expected.data(), n * kSize));
        if (o2 != nullptr) {
          ASSERT_TRUE(sameBytes(o2, expected.data(), n * kSize));
        }
        ASSERT_TRUE(out.guardsIntact(inPlace ? 0 : n * kSize));
        ASSERT_TRUE(acc.guardsIntact(n * kSize));
      }
    }
  }
}

TEST(VectorIo, EveryThreadOfABlockReducesItsShareAndTogetherTheyReduceEveryElementOnce) {
  // In place, a doubled element would show (acc + 2 local); every element size 1 to 8 bytes.
  for (const bool inPlace : {false, true}) {
    checkReduce<dtype::kFloat32, SumOp>(true, inPlace, !inPlace);
    checkReduce<dtype::kFloat16, SumOp>(true, inPlace, false);
    checkReduce<dtype::kBfloat16, MaxOp>(true, inPlace, true);
    checkReduce<dtype::kInt8, SumOp>(true, inPlace, false);
    checkReduce<dtype::kUint8, MinOp>(true, inPlace, true);
    checkReduce<dtype::kFloat64, ProdOp>(true, inPlace, false);
    checkReduce<dtype::kInt64, SumOp>(true, inPlace, true);
  }
  checkReduce<dtype::kInt32, SumOp>(false, false, true);  // no operand: the local copied through
}

}  // namespace
}  // namespace braid::kernels::device
