#include "work_braid.h"

#include <stdexcept>

namespace braid_torch {

WorkBraid::WorkBraid(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

void WorkBraid::succeed() {
  // Work first, then the future: a callback chained on the future may call wait() on this work.
  finish();
  future_->markCompleted(c10::IValue(outputs_));
}

void WorkBraid::failWith(const std::string& message) {
  auto error = std::make_exception_ptr(std::runtime_error(message));
  finish(error);
  future_->setError(error);
}

}  // namespace braid_torch
