// The Braid process group's data-movement operations beyond NCCL's classic set, with gloo's
// semantics: gather and scatter (list forms, a root), all_to_all (list form) and
// all_to_all_single with or without split sizes, and allgather_coalesced. Each is one queued
// task on the group's stream: Braid's alltoall for equal parts, else one Braid group of sends
// and receives straight from and into the user's tensors (which Braid runs without deadlock
// whatever the pattern); gather and scatter so avoid packing the root's list into one buffer.
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "process_group_braid.h"
#include "tensor_checks.h"

namespace braid_torch {

namespace {

// Every tensor of `list` is a dense CPU tensor of `reference`'s dtype and element count.
void checkList(const std::vector<at::Tensor>& list, const at::Tensor& reference, const char* call,
               const char* name) {
  for (size_t i = 0; i < list.size(); i++) {
    std::string what = std::string(name) + "[" + std::to_string(i) + "]";
    TORCH_CHECK_VALUE(
        list[i].defined() && list[i].device().is_cpu() && list[i].layout() == at::kStrided,
        "braid ", call, ": ", what, " must be a dense CPU tensor");
    checkSameType(list[i], reference, call, what);
    TORCH_CHECK_VALUE(list[i].numel() == reference.numel(), "braid ", call, ": ", what, " has ",
                      list[i].numel(), " elements, expected ", reference.numel());
  }
}

// One list of `size` tensors (the root's) or none (another rank's), as gloo requires.
const std::vector<at::Tensor>* rootList(std::vector<std::vector<at::Tensor>>& lists, bool isRoot,
                                        int size, const char* call, const char* name) {
  if (!isRoot) {
    TORCH_CHECK_VALUE(lists.empty() || (lists.size() == 1 && lists[0].empty()), "braid ", call,
                      ": ", name, " must be empty on a rank that is not the root");
    return nullptr;
  }
  TORCH_CHECK_VALUE(lists.size() == 1, "braid ", call, ": ", name, " holds ", lists.size(),
                    " lists on the root; the Braid backend takes exactly one");
  TORCH_CHECK_VALUE(static_cast<int>(lists[0].size()) == size, "braid ", call, ": ", name,
                    " holds ", lists[0].size(), " tensors, the group has ", size, " ranks");
  return &lists[0];
}

// Split sizes along dim 0: empty means equal parts. Returns the element offset and count of
// each rank's part of `t`.
void splitParts(const at::Tensor& t, const std::vector<int64_t>& splits, int size, const char* call,
                const char* name, std::vector<size_t>* offsets, std::vector<size_t>* counts) {
  const int64_t rows = t.dim() == 0 ? 1 : t.size(0);
  const int64_t rowElems = rows == 0 ? 0 : t.numel() / rows;
  std::vector<int64_t> rowsOf(size);
  if (splits.empty()) {
    TORCH_CHECK_VALUE(rows % size == 0, "braid ", call, ": ", name, " has ", rows,
                      " rows, not divisible by the group's ", size, " ranks");
    for (auto& r : rowsOf) r = rows / size;
  } else {
    TORCH_CHECK_VALUE(static_cast<int>(splits.size()) == size, "braid ", call, ": ", name,
                      "_split_sizes holds ", splits.size(), " sizes, the group has ", size,
                      " ranks");
    int64_t sum = 0;
    for (int p = 0; p < size; p++) {
      TORCH_CHECK_VALUE(splits[p] >= 0, "braid ", call, ": ", name, "_split_sizes[", p,
                        "]=", splits[p], " is negative");
      rowsOf[p] = splits[p];
      sum += splits[p];
    }
    TORCH_CHECK_VALUE(sum == rows, "braid ", call, ": ", name, "_split_sizes sum to ", sum,
                      ", the tensor has ", rows, " rows");
  }
  offsets->assign(size, 0);
  counts->assign(size, 0);
  size_t at = 0;
  for (int p = 0; p < size; p++) {
    (*offsets)[p] = at;
    (*counts)[p] = static_cast<size_t>(rowsOf[p] * rowElems);
    at += (*counts)[p];
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const at::Tensor& in = singleTensor(inputs, "gather", "tensor");
  checkRank(opts.rootRank, size_, "gather", "dst");
  const int root = static_cast<int>(opts.rootRank);
  const std::vector<at::Tensor>* outs =
      rootList(outputs, rank_ == root, size_, "gather", "gather_list");
  if (outs) checkList(*outs, in, "gather", "gather_list");
  ncclDataType_t type = toBraidType(in.scalar_type(), "gather", false);
  std::vector<at::Tensor> outList = outs ? *outs : std::vector<at::Tensor>{};
  // The root receives each rank's part straight into its output (a contiguous stand-in for a
  // strided one, copied after): no packing buffer, no second copy of the whole.
  std::vector<at::Tensor> landing;
  for (const at::Tensor& o : outList) landing.push_back(o.is_contiguous() ? o : o.contiguous());
  std::vector<at::Tensor> keep = landing;
  keep.push_back(in);
  const int me = rank_, size = size_;
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::GATHER, "gather", outList, keep, [=] {
    const size_t n = in.numel();
    if (me != root) return ncclSend(in.data_ptr(), n, type, root, comm, nullptr);
    landing[me].view({-1}).copy_(in.reshape({-1}));
    ncclGroupStart();
    for (int p = 0; p < size; p++)
      if (p != me) ncclRecv(landing[p].data_ptr(), n, type, p, comm, nullptr);
    ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess) return r;
    for (size_t i = 0; i < outList.size(); i++)
      if (!landing[i].is_same(outList[i])) outList[i].copy_(landing[i]);
    return ncclSuccess;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const at::Tensor& out = singleTensor(outputs, "scatter", "tensor");
  checkRank(opts.rootRank, size_, "scatter", "src");
  const int root = static_cast<int>(opts.rootRank);
  const std::vector<at::Tensor>* ins =
      rootList(inputs, rank_ == root, size_, "scatter", "scatter_list");
  if (ins) checkList(*ins, out, "scatter", "scatter_list");
  ncclDataType_t type = toBraidType(out.scalar_type(), "scatter", false);
  std::vector<at::Tensor> inList = ins ? *ins : std::vector<at::Tensor>{};
  std::vector<at::Tensor> keep = inList;
  keep.push_back(out);
  const int me = rank_, size = size_;
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::SCATTER, "scatter", {out}, keep, [=] {
    const size_t n = out.numel();
    if (me != root) return ncclRecv(out.data_ptr(), n, type, root, comm, nullptr);
    // Each part is sent from where it lies (made contiguous on this thread when it is not).
    std::vector<at::Tensor> parts;
    for (const at::Tensor& t : inList) parts.push_back(t.contiguous());
    out.view({-1}).copy_(parts[me].reshape({-1}));
    ncclGroupStart();
    for (int p = 0; p < size; p++)
      if (p != me) ncclSend(parts[p].data_ptr(), n, type, p, comm, nullptr);
    return ncclGroupEnd();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall_base(at::Tensor& output,
                                                                at::Tensor& input,
                                                                std::vector<int64_t>& outputSplits,
                                                                std::vector<int64_t>& inputSplits,
                                                                const c10d::AllToAllOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  checkTensor(input, "alltoall_base", "input");
  checkTensor(output, "alltoall_base", "output");
  checkSameType(output, input, "alltoall_base", "output");
  ncclDataType_t type = toBraidType(input.scalar_type(), "alltoall_base", false);
  const size_t elem = input.element_size();
  ncclComm_t comm = comm_;
  const int size = size_;
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK_VALUE(output.numel() == input.numel(), "braid alltoall_base: output has ",
                      output.numel(), " elements, the input ", input.numel());
    std::vector<size_t> offsets, counts;
    splitParts(input, {}, size, "alltoall_base", "input", &offsets, &counts);
    const void* src = input.data_ptr();
    void* dst = output.data_ptr();
    const size_t n = counts[0];
    return enqueue(c10d::OpType::ALLTOALL_BASE, "alltoall_base", {output}, {input},
                   [=] { return ncclAlltoAll(src, dst, n, type, comm, nullptr); });
  }
  std::vector<size_t> inOff, inCount, outOff, outCount;
  splitParts(input, inputSplits, size, "alltoall_base", "input", &inOff, &inCount);
  splitParts(output, outputSplits, size, "alltoall_base", "output", &outOff, &outCount);
  const char* src = static_cast<const char*>(input.data_ptr());
  char* dst = static_cast<char*>(output.data_ptr());
  return enqueue(c10d::OpType::ALLTOALL_BASE, "alltoall_base", {output}, {input}, [=] {
    // One group: every peer's part sent and received at once.
    ncclGroupStart();
    for (int p = 0; p < size; p++) {
      ncclSend(src + inOff[p] * elem, inCount[p], type, p, comm, nullptr);
      ncclRecv(dst + outOff[p] * elem, outCount[p], type, p, comm, nullptr);
    }
    return ncclGroupEnd();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::alltoall(std::vector<at::Tensor>& outputs,
                                                           std::vector<at::Tensor>& inputs,
                                                           const c10d::AllToAllOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  TORCH_CHECK_VALUE(
      static_cast<int>(inputs.size()) == size_ && static_cast<int>(outputs.size()) == size_,
      "braid alltoall: input_tensor_list holds ", inputs.size(), " tensors and output_tensor_list ",
      outputs.size(), ", the group has ", size_, " ranks");
  for (int p = 0; p < size_; p++) {
    checkTensor(inputs[p], "alltoall", "input_tensor_list[" + std::to_string(p) + "]");
    checkTensor(outputs[p], "alltoall", "output_tensor_list[" + std::to_string(p) + "]");
    checkSameType(inputs[p], inputs[0], "alltoall", "input_tensor_list[" + std::to_string(p) + "]");
    checkSameType(outputs[p], inputs[0], "alltoall",
                  "output_tensor_list[" + std::to_string(p) + "]");
  }
  ncclDataType_t type = toBraidType(inputs[0].scalar_type(), "alltoall", false);
  std::vector<at::Tensor> ins = inputs, outs = outputs;
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::ALLTOALL, "alltoall", outs, ins, [=] {
    ncclGroupStart();
    for (size_t p = 0; p < ins.size(); p++) {
      const int peer = static_cast<int>(p);
      ncclSend(ins[p].data_ptr(), ins[p].numel(), type, peer, comm, nullptr);
      ncclRecv(outs[p].data_ptr(), outs[p].numel(), type, peer, comm, nullptr);
    }
    return ncclGroupEnd();
  });
}

// output_lists[p][i] receives rank p's inputs[i] (torch's layout: one list per rank).
c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  TORCH_CHECK_VALUE(static_cast<int>(outputLists.size()) == size_,
                    "braid allgather_coalesced: output_tensor_lists holds ", outputLists.size(),
                    " lists, the group has ", size_, " ranks");
  std::vector<at::Tensor> flats, keep, outs;
  for (size_t i = 0; i < inputs.size(); i++) {
    checkTensor(inputs[i], "allgather_coalesced", "input_tensor_list[" + std::to_string(i) + "]");
    toBraidType(inputs[i].scalar_type(), "allgather_coalesced", false);
    flats.push_back(
        at::empty({static_cast<int64_t>(size_) * inputs[i].numel()}, inputs[i].options()));
  }
  for (int p = 0; p < size_; p++) {
    const std::string list = "output_tensor_lists[" + std::to_string(p) + "]";
    TORCH_CHECK_VALUE(outputLists[p].size() == inputs.size(), "braid allgather_coalesced: ", list,
                      " holds ", outputLists[p].size(), " tensors, expected one per input (",
                      inputs.size(), ")");
    for (size_t i = 0; i < inputs.size(); i++) {
      checkList({outputLists[p][i]}, inputs[i], "allgather_coalesced", list.c_str());
      outs.push_back(outputLists[p][i]);
    }
  }
  keep = inputs;
  keep.insert(keep.end(), flats.begin(), flats.end());
  std::vector<at::Tensor> ins = inputs;
  std::vector<std::vector<at::Tensor>> lists = outputLists;
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, "allgather_coalesced", outs, keep, [=] {
    // One Braid group of all-gathers into contiguous buffers, then the copies out.
    ncclGroupStart();
    for (size_t i = 0; i < ins.size(); i++)
      ncclAllGather(ins[i].data_ptr(), flats[i].data_ptr(), ins[i].numel(),
                    toBraidType(ins[i].scalar_type(), "allgather_coalesced", false), comm, nullptr);
    ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess) return r;
    for (size_t i = 0; i < ins.size(); i++) {
      const size_t n = ins[i].numel();
      for (size_t p = 0; p < lists.size(); p++)
        lists[p][i].copy_(flats[i].narrow(0, p * n, n).view(lists[p][i].sizes()));
    }
    return ncclSuccess;
  });
}

}  // namespace braid_torch
