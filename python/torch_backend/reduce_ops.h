// torch's reduce ops as Braid's: SUM, AVG, PRODUCT, MIN, MAX, and PREMUL_SUM (the factor from
// torch.distributed._make_nccl_premul_sum, a number or a one-element CPU tensor), which becomes
// an ncclRedOpCreatePreMulSum operator made for each call on the stream's thread. The bitwise
// ops (BAND, BOR, BXOR), which NCCL's operators (and so Braid's kernels) lack, and bool
// tensors, which a byte-wise sum would not keep boolean, are planned here as gloo computes them
// (planReduction).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "nccl.h"

namespace braid_torch {

/// torch's bitwise reduce ops.
enum class Bitwise { kNone, kAnd, kOr, kXor };

struct BraidReduceOp {
  ncclRedOp_t op = ncclSum;
  std::optional<double> premulFactor;  ///< PREMUL_SUM's factor
  Bitwise bitwise = Bitwise::kNone;    ///< BAND, BOR, BXOR (then `op` is unused)
};

/// Braid's op for torch's, or ValueError naming it. The bitwise ops only where `bitwise` says
/// the call plans them (all_reduce and reduce: planReduction); elsewhere they are refused.
BraidReduceOp toBraidOp(const c10d::ReduceOp& op, const char* call, bool bitwise = false);

/// How all_reduce and reduce run an op on a dtype. Bool tensors reduce as logical values, as
/// gloo's do: bytes of 0 and 1 under MAX (SUM, MAX, BOR: or), MIN (PRODUCT, MIN, BAND: and) or
/// SUM keeping the lowest bit (BXOR: the parity, which survives the byte's wrap-around, 256
/// being even); AVG and PREMUL_SUM of bools are a TypeError. The bitwise ops on integer tensors
/// all-gather every rank's tensor and fold them here in rank order (n times the data of a
/// reduction: they are rare, and exact). On floating-point tensors they are a TypeError, as in
/// gloo.
struct ReducePlan {
  ncclDataType_t type = ncclFloat32;
  BraidReduceOp op;               ///< what Braid runs (bool's mapped onto MAX, MIN or SUM)
  bool parity = false;            ///< bool BXOR: keep the sum's lowest bit
  Bitwise fold = Bitwise::kNone;  ///< integers' bitwise op: all-gather, then fold
};
ReducePlan planReduction(const BraidReduceOp& op, at::ScalarType dtype, const char* call);

/// Runs `plan` in place on `data` (contiguous) on `comm` of `world` ranks, this one `rank`: an
/// all-reduce, or with `root` >= 0 a reduce to it. On the stream's thread.
ncclResult_t runReduction(const ReducePlan& plan, const at::Tensor& data, ncclComm_t comm,
                          int world, int rank, int root);

/// Runs `call` with the Braid operator for `op` on `dtype` data: the built-in one, or a
/// pre-multiplied sum made for `comm` before the call and freed after it.
ncclResult_t withReduceOp(const BraidReduceOp& op, at::ScalarType dtype, ncclComm_t comm,
                          const std::function<ncclResult_t(ncclRedOp_t)>& call);

/// Runs reductions 0..count-1 (`call(i, op)`, reduction i on `dtypes[i]` data) as one Braid
/// group; with PREMUL_SUM one after another instead, each with its own operator (one per dtype).
ncclResult_t withReduceOpEach(const BraidReduceOp& op, const std::vector<at::ScalarType>& dtypes,
                              ncclComm_t comm,
                              const std::function<ncclResult_t(size_t, ncclRedOp_t)>& call);

}  // namespace braid_torch
