// Argument checks of the PyTorch backend: which tensors, dtypes and reduce ops Braid takes, each
// refusal raised on the caller's thread as a Python exception naming the argument and its value.
#pragma once

#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "nccl.h"

namespace braid_torch {

/// Braid's dtype for a tensor's, or TypeError. `forReduction` refuses bool (a sum of bools as
/// bytes would not be a bool); data-movement calls move bool tensors as bytes.
ncclDataType_t toBraidType(at::ScalarType type, const char* call, bool forReduction);

/// A dense, contiguous CPU tensor, or an error naming `what` (e.g. "tensors[0]") and the value.
void checkTensor(const at::Tensor& t, const char* call, const std::string& what);

/// Exactly one tensor per call (torch passes one per device; Braid's ranks are processes).
const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* call,
                               const char* what);

/// `rank` names a rank of a group of `size`, or ValueError naming `what`.
void checkRank(int64_t rank, int size, const char* call, const char* what);

/// Same dtype as `reference`, or TypeError.
void checkSameType(const at::Tensor& t, const at::Tensor& reference, const char* call,
                   const std::string& what);

}  // namespace braid_torch
