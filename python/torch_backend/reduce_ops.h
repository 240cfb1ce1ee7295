// torch's reduce ops as Braid's: SUM, AVG, PRODUCT, MIN, MAX, and PREMUL_SUM (the factor from
// torch.distributed._make_nccl_premul_sum, a number or a one-element CPU tensor), which becomes
// an ncclRedOpCreatePreMulSum operator made for each call on the stream's thread.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "nccl.h"

namespace braid_torch {

struct BraidReduceOp {
  ncclRedOp_t op = ncclSum;
  std::optional<double> premulFactor;  ///< PREMUL_SUM's factor
};

/// Braid's op for torch's, or ValueError naming it (bitwise ops are not offered).
BraidReduceOp toBraidOp(const c10d::ReduceOp& op, const char* call);

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
