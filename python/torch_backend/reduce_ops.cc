#include "reduce_ops.h"

#include <c10/util/Exception.h>

#include "tensor_checks.h"

namespace braid_torch {

BraidReduceOp toBraidOp(const c10d::ReduceOp& op, const char* call, bool bitwise) {
  const bool isBitwise = op.op_ == c10d::ReduceOp::BAND || op.op_ == c10d::ReduceOp::BOR ||
                         op.op_ == c10d::ReduceOp::BXOR;
  TORCH_CHECK_VALUE(bitwise || !isBitwise, "braid ", call, ": reduce op ", static_cast<int>(op.op_),
                    " (BAND, BOR or BXOR) is not supported here; all_reduce and reduce take it");
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
    case c10d::ReduceOp::BAND:
      return {ncclSum, std::nullopt, Bitwise::kAnd};
    case c10d::ReduceOp::BOR:
      return {ncclSum, std::nullopt, Bitwise::kOr};
    case c10d::ReduceOp::BXOR:
      return {ncclSum, std::nullopt, Bitwise::kXor};
    default:
      break;
  }
  TORCH_CHECK_VALUE(false, "braid ", call, ": reduce op ", static_cast<int>(op.op_),
                    " is not supported (SUM, AVG, PRODUCT, MIN, MAX, PREMUL_SUM, BAND, BOR, "
                    "BXOR)");
}

namespace {

const char* bitwiseName(Bitwise b) {
  return b == Bitwise::kAnd ? "BAND" : b == Bitwise::kOr ? "BOR" : "BXOR";
}

}  // namespace

ReducePlan planReduction(const BraidReduceOp& op, at::ScalarType dtype, const char* call) {
  ReducePlan plan;
  plan.op = op;
  const bool isBool = dtype == at::kBool;
  if (op.bitwise != Bitwise::kNone)
    TORCH_CHECK_TYPE(isBool || at::isIntegralType(dtype, /*includeBool=*/false), "braid ", call,
                     ": ", bitwiseName(op.bitwise), " needs an integer or bool tensor, not ",
                     dtype);
  if (!isBool) {
    plan.type = toBraidType(dtype, call, true);
    plan.fold = op.bitwise;
    return plan;
  }
  TORCH_CHECK_TYPE(op.bitwise != Bitwise::kNone || (!op.premulFactor && op.op != ncclAvg), "braid ",
                   call,
                   ": torch.bool tensors cannot be averaged or scaled (AVG, "
                   "PREMUL_SUM); SUM, PRODUCT, MIN, MAX, BAND, BOR and BXOR reduce them");
  plan.type = ncclUint8;  // torch keeps a bool as one byte, 0 or 1
  plan.op = BraidReduceOp{};
  switch (op.bitwise) {
    case Bitwise::kOr:
      plan.op.op = ncclMax;
      break;
    case Bitwise::kAnd:
      plan.op.op = ncclMin;
      break;
    case Bitwise::kXor:
      plan.op.op = ncclSum;
      plan.parity = true;
      break;
    case Bitwise::kNone:
      plan.op.op = op.op == ncclSum || op.op == ncclMax ? ncclMax : ncclMin;
      break;
  }
  return plan;
}

ncclResult_t runReduction(const ReducePlan& plan, const at::Tensor& data, ncclComm_t comm,
                          int world, int rank, int root) {
  void* p = data.data_ptr();
  const size_t n = static_cast<size_t>(data.numel());
  if (plan.fold == Bitwise::kNone) {
    ncclResult_t r = withReduceOp(plan.op, data.scalar_type(), comm, [&](ncclRedOp_t o) {
      return root < 0 ? ncclAllReduce(p, p, n, plan.type, o, comm, nullptr)
                      : ncclReduce(p, p, n, plan.type, o, root, comm, nullptr);
    });
    if (r == ncclSuccess && plan.parity && (root < 0 || rank == root))
      data.view(at::kByte).bitwise_and_(1);
    return r;
  }
  // Every rank's tensor, then the fold in rank order (every rank computes the same bits).
  at::Tensor all = at::empty({world, static_cast<int64_t>(n)}, data.options());
  ncclResult_t r = ncclAllGather(p, all.data_ptr(), n, plan.type, comm, nullptr);
  if (r != ncclSuccess || (root >= 0 && rank != root)) return r;
  at::Tensor acc = all[0].clone();
  for (int i = 1; i < world; i++) {
    if (plan.fold == Bitwise::kAnd) acc.bitwise_and_(all[i]);
    if (plan.fold == Bitwise::kOr) acc.bitwise_or_(all[i]);
    if (plan.fold == Bitwise::kXor) acc.bitwise_xor_(all[i]);
  }
  data.view({-1}).copy_(acc);
  return ncclSuccess;
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
