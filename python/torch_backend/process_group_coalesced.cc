// The tensor-coalesced collectives PyTorch 2.x calls from torch.distributed._coalescing_manager
// (and FSDP): several all_gather_into_tensor or reduce_scatter_tensor calls as one group, each
// pair an (output, input) of its own size and dtype. They run as one Braid group
// (ncclGroupStart/End), so the pairs share one schedule instead of one call each.
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "process_group_braid.h"
#include "reduce_ops.h"
#include "tensor_checks.h"

#if BRAID_TORCH_MAJOR >= 2

namespace braid_torch {

namespace {

struct Pair {
  const void* src;
  void* dst;
  size_t count;  // elements per rank: the all-gather's input, the reduce-scatter's output
  ncclDataType_t type;
  at::ScalarType dtype;
};

// Checks outputs[i] against inputs[i]: dense CPU tensors of one dtype, the larger of the two
// `size` times the smaller. `gather`: the output is the larger (all-gather), else the input.
std::vector<Pair> checkPairs(const std::vector<at::Tensor>& outputs,
                             const std::vector<at::Tensor>& inputs, int size, bool gather,
                             const char* call) {
  TORCH_CHECK_VALUE(outputs.size() == inputs.size(), "braid ", call, ": ", outputs.size(),
                    " outputs for ", inputs.size(), " inputs; they come in pairs");
  std::vector<Pair> pairs;
  for (size_t i = 0; i < inputs.size(); i++) {
    const std::string in = "inputs[" + std::to_string(i) + "]";
    const std::string out = "outputs[" + std::to_string(i) + "]";
    checkTensor(inputs[i], call, in);
    checkTensor(outputs[i], call, out);
    checkSameType(outputs[i], inputs[i], call, out);
    const at::Tensor& large = gather ? outputs[i] : inputs[i];
    const at::Tensor& small = gather ? inputs[i] : outputs[i];
    TORCH_CHECK_VALUE(large.numel() == size * small.numel(), "braid ", call, ": ",
                      gather ? out : in, " has ", large.numel(), " elements, expected world size ",
                      size, " x ", gather ? in : out, "'s ", small.numel());
    pairs.push_back({inputs[i].data_ptr(), outputs[i].data_ptr(),
                     static_cast<size_t>(small.numel()),
                     toBraidType(inputs[i].scalar_type(), call, !gather), inputs[i].scalar_type()});
  }
  return pairs;
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const char* call = "allgather_into_tensor_coalesced";
  std::vector<Pair> pairs = checkPairs(outputs, inputs, size_, true, call);
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::COALESCED, call, outputs, inputs, [=] {
    ncclGroupStart();
    for (const Pair& p : pairs) ncclAllGather(p.src, p.dst, p.count, p.type, comm, nullptr);
    return ncclGroupEnd();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const char* call = "reduce_scatter_tensor_coalesced";
  std::vector<Pair> pairs = checkPairs(outputs, inputs, size_, false, call);
  BraidReduceOp op = toBraidOp(opts.reduceOp, call);
  ncclComm_t comm = comm_;
  std::vector<at::ScalarType> dtypes;
  for (const Pair& p : pairs) dtypes.push_back(p.dtype);
  return enqueue(c10d::OpType::COALESCED, call, outputs, inputs, [=] {
    return withReduceOpEach(op, dtypes, comm, [&](size_t i, ncclRedOp_t o) {
      const Pair& p = pairs[i];
      return ncclReduceScatter(p.src, p.dst, p.count, p.type, o, comm, nullptr);
    });
  });
}

}  // namespace braid_torch

#endif  // BRAID_TORCH_MAJOR >= 2
