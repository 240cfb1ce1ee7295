// all_reduce of a sparse COO tensor, as gloo does it: every rank's indices and values are
// gathered (padded to the largest count, which is all-gathered first), then summed in rank
// order and coalesced, so every rank ends with the same tensor, bit for bit. SUM only, as gloo.
#include <algorithm>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "process_group_braid.h"
#include "tensor_checks.h"

namespace braid_torch {

namespace {

ncclResult_t sparseSum(at::Tensor tensor, int size, ncclComm_t comm) {
  at::Tensor local = tensor.coalesce();
  at::Tensor indices = local._indices().contiguous();  // [sparse dims, nnz]
  at::Tensor values = local._values().contiguous();    // [nnz, dense sizes...]
  int64_t nnz = local._nnz();
  std::vector<int64_t> counts(size);
  ncclResult_t r = ncclAllGather(&nnz, counts.data(), 1, ncclInt64, comm, nullptr);
  if (r != ncclSuccess) return r;
  const int64_t most = *std::max_element(counts.begin(), counts.end());
  const int64_t sparseDims = local.sparse_dim();
  std::vector<int64_t> valueShape = values.sizes().vec();
  valueShape[0] = most;
  at::Tensor myIndices = at::zeros({sparseDims, most}, indices.options());
  at::Tensor myValues = at::zeros(valueShape, values.options());
  myIndices.narrow(1, 0, nnz).copy_(indices);
  myValues.narrow(0, 0, nnz).copy_(values);
  std::vector<int64_t> allShape = valueShape;
  allShape.insert(allShape.begin(), size);
  at::Tensor allIndices = at::empty({size, sparseDims, most}, indices.options());
  at::Tensor allValues = at::empty(allShape, values.options());
  if (most > 0) {
    ncclGroupStart();
    ncclAllGather(myIndices.data_ptr(), allIndices.data_ptr(), myIndices.numel(), ncclInt64, comm,
                  nullptr);
    ncclAllGather(myValues.data_ptr(), allValues.data_ptr(), myValues.numel(),
                  toBraidType(values.scalar_type(), "allreduce", true), comm, nullptr);
    r = ncclGroupEnd();
    if (r != ncclSuccess) return r;
  }
  // Rank order on every rank: the same sums in the same order.
  at::Tensor sum = at::zeros_like(local);
  for (int p = 0; p < size; p++) {
    sum = sum + at::sparse_coo_tensor(allIndices[p].narrow(1, 0, counts[p]),
                                      allValues[p].narrow(0, 0, counts[p]), tensor.sizes(),
                                      values.options().layout(at::kSparse));
  }
  tensor.copy_(sum.coalesce());
  return ncclSuccess;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::sparseAllreduce(
    const at::Tensor& t, const c10d::AllreduceOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  TORCH_CHECK_VALUE(t.layout() == at::kSparse, "braid allreduce: tensor has layout ", t.layout(),
                    "; sparse tensors must be COO");
  TORCH_CHECK_VALUE(t.device().is_cpu(), "braid allreduce: tensor is on device ", t.device(),
                    "; the Braid backend takes CPU tensors only");
  TORCH_CHECK_VALUE(opts.reduceOp == c10d::ReduceOp::SUM, "braid allreduce: reduce op ",
                    static_cast<int>(opts.reduceOp.op_),
                    " on a sparse tensor; sparse tensors take SUM only (as gloo)");
  toBraidType(t.scalar_type(), "allreduce", true);
  ncclComm_t comm = comm_;
  const int size = size_;
  at::Tensor tensor = t;
  return enqueue(c10d::OpType::ALLREDUCE, "allreduce", {t}, {},
                 [=] { return sparseSum(tensor, size, comm); });
}

}  // namespace braid_torch
