#include "reduce_ops.h"

#include <c10/util/Exception.h>

#include "tensor_checks.h"

namespace braid_torch {

BraidReduceOp toBraidOp(const c10d::ReduceOp& op, const char* call) {
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      return {ncclSum, std::nullopt};
    case c10d::ReduceOp::AVG:
      return {ncclAvg, std::nullopt};
    case c10d::ReduceOp::PRODUCT:
      return {ncclProd, std::nullopt};
    case c10d::ReduceOp::MIN:
      return {ncclMin, std::nullopt};
    case c10d::ReduceOp::MAX:
      return {ncclMax, std::nullopt};
    case c10d::ReduceOp::PREMUL_SUM: {
      auto* s = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK_VALUE(s, "braid ", call, ": PREMUL_SUM without its factor");
#if BRAID_TORCH_MAJOR >= 2
      // PyTorch 2.x keeps one optional tensor factor.
      if (!s->tensor_factor.defined()) return {ncclSum, s->double_factor};
      const at::Tensor& factor = s->tensor_factor;
      const bool oneFactor = true;
#else
      // PyTorch 1.x keeps a list of tensor factors (one per tensor of the call).
      if (s->tensor_factors.empty()) return {ncclSum, s->double_factor};
      const at::Tensor& factor = s->tensor_factors[0];
      const bool oneFactor = s->tensor_factors.size() == 1;
#endif
      TORCH_CHECK_VALUE(oneFactor && factor.numel() == 1 && factor.device().is_cpu(), "braid ",
                        call,
                        ": PREMUL_SUM's factor must be a number or one one-element CPU tensor");
      return {ncclSum, factor.item<double>()};
    }
    default:
      break;
  }
  TORCH_CHECK_VALUE(false, "braid ", call, ": reduce op ", static_cast<int>(op.op_),
                    " is not supported (SUM, AVG, PRODUCT, MIN, MAX, PREMUL_SUM)");
}

ncclResult_t withReduceOp(const BraidReduceOp& op, at::ScalarType dtype, ncclComm_t comm,
                          const std::function<ncclResult_t(ncclRedOp_t)>& call) {
  if (!op.premulFactor) return call(op.op);
  // The factor in the data's own type, read from host memory when the operator is made.
  at::Tensor factor = at::scalar_tensor(*op.premulFactor, at::TensorOptions().dtype(dtype));
  ncclRedOp_t premul;
  ncclResult_t r =
      ncclRedOpCreatePreMulSum(&premul, factor.data_ptr(), toBraidType(dtype, "PREMUL_SUM", true),
                               ncclScalarHostImmediate, comm);
  if (r != ncclSuccess) return r;
  r = call(premul);
  ncclRedOpDestroy(premul, comm);
  return r;
}

ncclResult_t withReduceOpEach(const BraidReduceOp& op, const std::vector<at::ScalarType>& dtypes,
                              ncclComm_t comm,
                              const std::function<ncclResult_t(size_t, ncclRedOp_t)>& call) {
  if (op.premulFactor) {
    for (size_t i = 0; i < dtypes.size(); i++) {
      ncclResult_t r = withReduceOp(op, dtypes[i], comm, [&](ncclRedOp_t o) { return call(i, o); });
      if (r != ncclSuccess) return r;
    }
    return ncclSuccess;
  }
  ncclGroupStart();
  for (size_t i = 0; i < dtypes.size(); i++) call(i, op.op);
  return ncclGroupEnd();
}

}  // namespace braid_torch
