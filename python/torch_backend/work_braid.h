// The Work object of the Braid process group: completed from the host stream's thread when the
// operation has run, with its output tensors as the value of its future (what DDP's comm hooks
// and `Work.get_future()` read) or with Braid's error text as the exception.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace braid_torch {

class WorkBraid : public c10d::Work {
 public:
  WorkBraid(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  /// The sender of a receive from any source (torch's Work._source_rank()); set before the
  /// work completes.
  int sourceRank() const override { return sourceRank_; }
  void setSourceRank(int rank) { sourceRank_ = rank; }

  /// Marks the work done and completes the future with the outputs; called once.
  void succeed();
  /// Marks the work failed with `message` (a RuntimeError in Python, from wait() and from the
  /// future); called once.
  void failWith(const std::string& message);

 private:
  std::vector<at::Tensor> outputs_;
  int sourceRank_ = -1;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace braid_torch
