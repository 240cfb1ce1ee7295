// Calls a generic lambda with the dtype and op as template arguments: the tests' view of the
// CUDA kernels' dtype x op switch, for code that runs the element definition on the host.
#pragma once

#include "kernels/ops.h"
#include "kernels/reduce.h"

namespace braid::kernels::testing {

template <int D, class F>
void withOp(BaseOp op, F&& f) {
  switch (op) {
    case BaseOp::kSum:
      return f.template operator()<D, SumOp>();
    case BaseOp::kProd:
      return f.template operator()<D, ProdOp>();
    case BaseOp::kMax:
      return f.template operator()<D, MaxOp>();
    case BaseOp::kMin:
      return f.template operator()<D, MinOp>();
  }
}

template <class F>
void withDtypeAndOp(int d, BaseOp op, F&& f) {
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
      return;
  }
}

}  // namespace braid::kernels::testing
