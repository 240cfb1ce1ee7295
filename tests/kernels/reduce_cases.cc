// The reduce test cases shared by the CPU and CUDA kernel tests (reduce_cases.h).
#include "tests/kernels/reduce_cases.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "tests/kernels/reference.h"

namespace braid::kernels::testing {

const char* opName(OpKind kind) {
  static const char* const names[] = {"sum", "prod", "max", "min", "avg", "premulsum", "postdiv"};
  return names[static_cast<int>(kind)];
}

namespace {

/// A premul factor in the dtype's representation: small integers, or a moderate float.
void setScalar(ReduceOp& op, std::mt19937_64& rng) {
  std::uint64_t bits = 0;
  if (isIntegerDtype(op.dtype)) {
    bits = rng() % 2 ? rng() : rng() % 9 - 4;
  } else {
    static const float kFactors[] = {0.5f, 1.5f, -3.0f, 0.1f, 7.0f / 3.0f, 1e-3f};
    const float factor = kFactors[rng() % (sizeof(kFactors) / sizeof(kFactors[0]))];
    if (op.dtype == 8) {
      const double d = factor;
      std::memcpy(&bits, &d, sizeof(d));
    } else {
      bits = nearestEncoding(op.dtype, factor);
    }
  }
  std::memcpy(op.scalar, &bits, typeSize(op.dtype));
}

}  // namespace

ReduceOp makeOp(int dtype, OpKind kind, std::mt19937_64& rng) {
  ReduceOp op;
  op.dtype = dtype;
  switch (kind) {
    case OpKind::kSum:
      op.op = BaseOp::kSum;
      break;
    case OpKind::kProd:
      op.op = BaseOp::kProd;
      break;
    case OpKind::kMax:
      op.op = BaseOp::kMax;
      break;
    case OpKind::kMin:
      op.op = BaseOp::kMin;
      break;
    case OpKind::kAvg: {
      // NCCL's resolution: integers divide the sum, floats premultiply by 1/n rounded to the
      // dtype (through float but for fp64), here from the reference's own rounding.
      const std::uint32_t nranks = 2 + static_cast<std::uint32_t>(rng() % 7);
      op.op = BaseOp::kSum;
      if (isIntegerDtype(dtype)) {
        op.postDiv = nranks;
      } else {
        op.preMul = true;
        std::uint64_t bits = 0;
        const double inverse = 1.0 / nranks;
        if (dtype == 8)
          std::memcpy(&bits, &inverse, sizeof(inverse));
        else
          bits = nearestEncoding(dtype, static_cast<float>(inverse));
        std::memcpy(op.scalar, &bits, typeSize(dtype));
      }
      break;
    }
    case OpKind::kPostDiv:
      op.op = BaseOp::kSum;
      op.postDiv = 2 + static_cast<std::uint32_t>(rng() % 7);
      break;
    case OpKind::kPreMulSum:
      op.op = BaseOp::kSum;
      op.preMul = true;
      setScalar(op, rng);
      break;
  }
  return op;
}

std::vector<Layout> allLayouts() {
  std::vector<Layout> layouts;
  for (bool hasAcc : {true, false}) {
    for (bool hasOut1 : {false, true}) {
      for (Alias alias : {Alias::kNone, Alias::kOut0IsAcc, Alias::kOut0IsLocal}) {
        if (alias == Alias::kOut0IsAcc && !hasAcc) continue;
        for (Misalign m : {Misalign::kNone, Misalign::kAll, Misalign::kMixed}) {
          layouts.push_back({hasAcc, hasOut1, alias, m});
        }
      }
    }
  }
  return layouts;
}

std::string describe(const Layout& l) {
  static const char* const aliases[] = {"separate out0", "out0==acc", "out0==local"};
  static const char* const misaligns[] = {"aligned", "all +1 element", "acc/out1 +1 element"};
  std::ostringstream s;
  s << (l.hasAcc ? "acc" : "acc=nullptr") << ", " << (l.hasOut1 ? "out1" : "no out1") << ", "
    << aliases[static_cast<int>(l.alias)] << ", " << misaligns[static_cast<int>(l.misalign)];
  return s.str();
}

namespace {

/// A 64-byte aligned buffer with guard elements on both sides, filled with a pattern.
class GuardedBuffer {
 public:
  static constexpr std::size_t kGuard = kGuardElements;
  GuardedBuffer(int dtype, std::size_t count, bool misaligned, unsigned char pattern)
      : elementSize_(typeSize(dtype)),
        bytes_((count + 2 * kGuard + 1) * elementSize_ + 64),
        storage_(bytes_, pattern),
        pattern_(pattern) {
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    const std::size_t pad = (64 - address % 64) % 64;
    data_ = storage_.data() + pad + (kGuard + (misaligned ? 1 : 0)) * elementSize_;
    used_ = count * elementSize_;
  }
  unsigned char* data() { return data_; }
  /// Bytes outside [data, data + count elements) still hold the pattern.
  bool guardsIntact() const {
    for (std::size_t i = 0; i < bytes_; ++i) {
      const unsigned char* p = storage_.data() + i;
      if (p >= data_ && p < data_ + used_) continue;
      if (*p != pattern_) return false;
    }
    return true;
  }

 private:
  std::size_t elementSize_;
  std::size_t bytes_;
  std::vector<unsigned char> storage_;
  unsigned char pattern_;
  unsigned char* data_;
  std::size_t used_ = 0;
};

}  // namespace

std::string runLayout(const ReduceCall& reduce, const ReduceOp& op, unsigned flags,
                      const std::vector<std::uint64_t>& acc,
                      const std::vector<std::uint64_t>& local,
                      const std::vector<std::uint64_t>& expected, const Layout& layout) {
  const int d = op.dtype;
  const std::size_t n = local.size();
  const bool all = layout.misalign == Misalign::kAll;
  const bool mixed = layout.misalign == Misalign::kMixed;
  GuardedBuffer accBuf(d, n, all || mixed, 0xA1), localBuf(d, n, all, 0xB2);
  GuardedBuffer out0Buf(d, n, all, 0xC3), out1Buf(d, n, all || mixed, 0xD4);
  for (std::size_t i = 0; i < n; ++i) {
    storeElement(d, accBuf.data(), i, acc[i]);
    storeElement(d, localBuf.data(), i, local[i]);
  }
  void* out0 = out0Buf.data();
  if (layout.alias == Alias::kOut0IsAcc) out0 = accBuf.data();
  if (layout.alias == Alias::kOut0IsLocal) out0 = localBuf.data();
  void* out1 = layout.hasOut1 ? out1Buf.data() : nullptr;
  reduce(op, out0, out1, layout.hasAcc ? accBuf.data() : nullptr, localBuf.data(), n, flags);

  std::ostringstream error;
  for (int target = 0; target < (layout.hasOut1 ? 2 : 1); ++target) {
    const void* out = target == 0 ? out0 : out1;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t got = loadElement(d, out, i);
      if (!sameResult(d, expected[i], got)) {
        error << std::hex << "out" << target << "[" << std::dec << i << "]: acc=0x" << std::hex
              << acc[i] << " local=0x" << local[i] << " expected=0x" << expected[i] << " got=0x"
              << got << " (" << describe(layout) << ")";
        return error.str();
      }
    }
  }
  if (!accBuf.guardsIntact() || !localBuf.guardsIntact() || !out0Buf.guardsIntact() ||
      !out1Buf.guardsIntact()) {
    return "write outside the buffers (" + describe(layout) + ")";
  }
  // Inputs not aliased by out0 are untouched.
  for (std::size_t i = 0; i < n; ++i) {
    if (layout.alias != Alias::kOut0IsAcc && loadElement(d, accBuf.data(), i) != acc[i]) {
      return "acc modified (" + describe(layout) + ")";
    }
    if (layout.alias != Alias::kOut0IsLocal && loadElement(d, localBuf.data(), i) != local[i]) {
      return "local modified (" + describe(layout) + ")";
    }
  }
  if (!layout.hasOut1 && !std::all_of(out1Buf.data(), out1Buf.data() + n * typeSize(d),
                                      [](unsigned char c) { return c == 0xD4; })) {
    return "out1 written although nullptr";
  }
  return {};
}

std::string checkAllLayouts(const ReduceCall& reduce, int dtype, OpKind kind, std::uint64_t seed,
                            const std::vector<std::size_t>& counts) {
  std::mt19937_64 rng(seed);
  const std::vector<Layout> layouts = allLayouts();
  for (unsigned flags : kFlagSets) {
    const ReduceOp op = makeOp(dtype, kind, rng);
    for (std::size_t count : counts) {
      const std::vector<std::uint64_t> acc = randomElements(dtype, count, rng);
      const std::vector<std::uint64_t> local = randomElements(dtype, count, rng);
      std::vector<std::uint64_t> withAcc(count), withoutAcc(count);
      for (std::size_t i = 0; i < count; ++i) {
        withAcc[i] = referenceElement(op, flags, &acc[i], local[i]);
        withoutAcc[i] = referenceElement(op, flags, nullptr, local[i]);
      }
      for (const Layout& layout : layouts) {
        const std::string error =
            runLayout(reduce, op, flags, acc, local, layout.hasAcc ? withAcc : withoutAcc, layout);
        if (!error.empty()) {
          std::ostringstream context;
          context << error << "; flags=" << flags << " count=" << count << " postDiv=" << op.postDiv
                  << " preMul=" << op.preMul;
          return context.str();
        }
      }
    }
  }
  return {};
}

}  // namespace braid::kernels::testing
