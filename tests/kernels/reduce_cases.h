// The reduce test cases shared by the CPU and CUDA kernel tests: ops, flag sets, buffer layouts
// (aliasing, misalignment, guards) and the bitwise check of one call against the reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/reduce.h"

namespace braid::kernels::testing {

/// kAvg: ncclAvg as the library resolves it for the dtype (floats: premul by the dtype's
/// 1/n; integers: postDiv n); kPostDiv: a division of the result for every dtype (what the
/// kernels also support for floats).
enum class OpKind { kSum, kProd, kMax, kMin, kAvg, kPreMulSum, kPostDiv };
inline constexpr OpKind kAllOps[] = {OpKind::kSum,    OpKind::kProd, OpKind::kMax,
                                     OpKind::kMin,    OpKind::kAvg,  OpKind::kPreMulSum,
                                     OpKind::kPostDiv};

const char* opName(OpKind kind);

inline constexpr std::size_t kCounts[] = {0,  1,  2,  3,  7,  15,  16,   17,
                                          31, 33, 63, 64, 65, 127, 1000, 4099};
inline constexpr unsigned kFlagSets[] = {0u, kApplyPre, kApplyPost, kApplyPre | kApplyPost};

/// A ReduceOp for the kind, with a random rank count (avg, postdiv) or premul scalar.
ReduceOp makeOp(int dtype, OpKind kind, std::mt19937_64& rng);

enum class Alias { kNone, kOut0IsAcc, kOut0IsLocal };
enum class Misalign { kNone, kAll, kMixed };  // kMixed: acc and out1 off by one element

struct Layout {
  bool hasAcc;
  bool hasOut1;
  Alias alias;
  Misalign misalign;
};

/// Every combination of accumulator, second output, aliasing and misalignment.
std::vector<Layout> allLayouts();
std::string describe(const Layout& l);

/// Elements of guard on each side of every test buffer (an implementation under test that maps
/// the buffers elsewhere copies the guards too, so a stray write shows up).
inline constexpr std::size_t kGuardElements = 16;

/// The kernel under test, with kernels::reduce's signature.
using ReduceCall = std::function<void(const ReduceOp& op, void* out0, void* out1, const void* acc,
                                      const void* local, std::size_t count, unsigned flags)>;

/// Runs one layout; returns an empty string or the first mismatch.
std::string runLayout(const ReduceCall& reduce, const ReduceOp& op, unsigned flags,
                      const std::vector<std::uint64_t>& acc,
                      const std::vector<std::uint64_t>& local,
                      const std::vector<std::uint64_t>& expected, const Layout& layout);

/// Every flag set x count x layout for one dtype and op kind, against the reference; returns
/// an empty string or the first mismatch with its context.
std::string checkAllLayouts(const ReduceCall& reduce, int dtype, OpKind kind, std::uint64_t seed,
                            const std::vector<std::size_t>& counts);

}  // namespace braid::kernels::testing
