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
/// bytes would not be a bool: all_reduce and reduce plan bool reductions themselves,
/// reduce_ops.h); data-movement calls move bool tensors as bytes.
ncclDataType_t toBraidType(at::ScalarType type, const char* call, bool forReduction);

/// A dense CPU tensor, contiguous unless `strided` allows otherwise, or an error naming `what`
/// (e.g. "tensors[0]") and the value.
void checkTensor(const at::Tensor& t, const char* call, const std::string& what,
                 bool strided = false);

/// Exactly one tensor per call (torch passes one per device; Braid's ranks are processes).
/// `strided`: the call moves a non-contiguous tensor through a contiguous stand-in (Strided).
const at::Tensor& singleTensor(const std::vector<at::Tensor>& tensors, const char* call,
                               const char* what, bool strided = false);

/// A tensor as a Braid call moves it: the tensor itself when contiguous, else a contiguous
/// stand-in the task fills before the call and copies back after it (on the stream's thread,
/// after the calls queued before it, as gloo reduces a strided tensor through a copy).
struct Strided {
  explicit Strided(const at::Tensor& t);
  void in() const;   ///< the tensor's values into the stand-in
  void out() const;  ///< the stand-in's values back into the tensor
  at::Tensor tensor, work;
};

/// `rank` names a rank of a group of `size`, or ValueError naming `what`.
void checkRank(int64_t rank, int size, const char* call, const char* what);

/// Same dtype as `reference`, or TypeError.
void checkSameType(const at::Tensor& t, const at::Tensor& reference, const char* call,
                   const std::string& what);

}  // namespace braid_torch
