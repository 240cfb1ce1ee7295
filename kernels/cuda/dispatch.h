// The dtype x op switch of the CUDA kernels: calls a generic lambda with the dtype and the op
// functor as template arguments (`f.template operator()<D, Op>()`). The kernels launch through
// it, and the tests run the element definition on the host through it. Returns false for a
// dtype or op outside NCCL's (nothing is called).
#pragma once

#include "kernels/ops.h"
#include "kernels/reduce.h"

namespace braid::kernels::cuda {

template <int D, class F>
bool withOp(BaseOp op, F&& f) {
  switch (op) {
    case BaseOp::kSum:
      f.template operator()<D, SumOp>();
      return true;
    case BaseOp::kProd:
      f.template operator()<D, ProdOp>();
      return true;
    case BaseOp::kMax:
      f.template operator()<D, MaxOp>();
      return true;
    case BaseOp::kMin:
      f.template operator()<D, MinOp>();
      return true;
  }
  return false;
}

template <class F>
bool withDtypeAndOp(int d, BaseOp op, F&& f) {
  switch (d) {
    case dtype::kInt8:
      return withOp<dtype::kInt8>(op, f);
    case dtype::kUint8:
      return withOp<dtype::kUint8>(op, f);
    case dtype::kInt32:
      return withOp<dtype::kInt32>(op, f);
    case dtype::kUint32:
      return withOp<dtype::kUint32>(op, f);
    case dtype::kInt64:
      return withOp<dtype::kInt64>(op, f);
    case dtype::kUint64:
      return withOp<dtype::kUint64>(op, f);
    case dtype::kFloat16:
      return withOp<dtype::kFloat16>(op, f);
    case dtype::kFloat32:
      return withOp<dtype::kFloat32>(op, f);
    case dtype::kFloat64:
      return withOp<dtype::kFloat64>(op, f);
    case dtype::kBfloat16:
      return withOp<dtype::kBfloat16>(op, f);
    case dtype::kFp8E4M3:
      return withOp<dtype::kFp8E4M3>(op, f);
    case dtype::kFp8E5M2:
      return withOp<dtype::kFp8E5M2>(op, f);
    default:
      return false;
  }
}

}  // namespace braid::kernels::cuda
