#include "process_group_braid.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include <pybind11/pybind11.h>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "reduce_ops.h"
#include "shared_allocator.h"
#include "tensor_checks.h"
#include "work_braid.h"

namespace braid_torch {

namespace {

// The key under the group's PrefixStore where rank 0 publishes the communicator's id.
constexpr const char* kUniqueIdKey = "braid_unique_id";

void checkInit(ncclResult_t r, const char* what) {
  TORCH_CHECK(r == ncclSuccess, "braid process group: ", what, " failed: ", ncclGetErrorString(r),
              ": ", ncclGetLastError(nullptr));
}

}  // namespace

struct ProcessGroupBraid::Task {
  c10::intrusive_ptr<WorkBraid> work;
  const char* call;
  ncclComm_t comm;
  std::vector<at::Tensor> keepAlive;
  std::function<ncclResult_t()> body;
  std::chrono::milliseconds timeout;  // the call's own (options.timeout), or kUnsetTimeout
};

namespace {
// The options' timeout of the call being made on this thread (CallTimeout sets it).
thread_local std::chrono::milliseconds tCallTimeout = c10d::kUnsetTimeout;
}  // namespace

ProcessGroupBraid::CallTimeout::CallTimeout(std::chrono::milliseconds timeout) {
  tCallTimeout = timeout;
}
ProcessGroupBraid::CallTimeout::~CallTimeout() {
  tCallTimeout = c10d::kUnsetTimeout;
}

ProcessGroupBraid::ProcessGroupBraid(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout)
    : TorchBackendBase(rank, size), store_(store) {
  ncclUniqueId id;
  if (rank == 0) {
    // A fresh id, not ncclGetUniqueId's: under torchrun MASTER_PORT is torch's store.
    checkInit(braidGetFreshUniqueId(&id), "braidGetFreshUniqueId");
    const auto* bytes = reinterpret_cast<const uint8_t*>(&id);
    store->set(kUniqueIdKey, std::vector<uint8_t>(bytes, bytes + sizeof(id)));
  } else {
    std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof(id), "braid process group: the store's ", kUniqueIdKey,
                " holds ", bytes.size(), " bytes, expected ", sizeof(id));
    std::memcpy(&id, bytes.data(), sizeof(id));
  }
  checkInit(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
  // torch's timeout (init_process_group(timeout=...), 30 min by default) bounds every wait,
  // as it does for torch's NCCL backend; an explicit BRAID_TIMEOUT_S wins.
  const char* braidTimeout = std::getenv("BRAID_TIMEOUT_S");
  if ((!braidTimeout || !*braidTimeout) && timeout.count() > 0) {
    checkInit(braidCommSetTimeout(comm_, timeout.count() / 1000.0), "braidCommSetTimeout");
  }
  ncclResult_t r = braidStreamCreate(&stream_);
  if (r != ncclSuccess) ncclCommDestroy(comm_);
  checkInit(r, "braidStreamCreate");
  // Point-to-point channels share the group's deadline.
  channels_ = std::make_unique<PeerChannels>(store, rank, commTimeoutSeconds());
}

ProcessGroupBraid::~ProcessGroupBraid() {
  release(false);
}

void ProcessGroupBraid::release(bool abort) {
  if (!comm_) return;  // shut down before
  {
    // torch drops process groups with the GIL held, and the stream's thread may need the GIL to
    // finish its last task (dropping a future whose callbacks are Python functions).
    std::optional<pybind11::gil_scoped_release> noGil;
    if (Py_IsInitialized() && PyGILState_Check()) noGil.emplace();
    // Every queued task ends (with a result or an error): bounded by the deadline.
    braidStreamDestroy(stream_);
    channels_.reset();
  }
  // Shared bucket memory may outlive the group: its registrations with comm_ go first.
  forgetComm(comm_);
  ncclResult_t asyncError = ncclSuccess;
  ncclCommGetAsyncError(comm_, &asyncError);
  // A failed communicator's peers may be gone: abort frees it without talking to them.
  if (abort || asyncError != ncclSuccess) {
    ncclCommAbort(comm_);
  } else {
    ncclCommDestroy(comm_);
  }
  comm_ = nullptr;
  stream_ = nullptr;
}

void ProcessGroupBraid::requireOpen(const char* call) const {
  TORCH_CHECK(comm_, "braid ", call, ": the process group was shut down (destroy_process_group)");
}

double ProcessGroupBraid::commTimeoutSeconds() const {
  requireOpen("comm_timeout_seconds");
  double seconds = 0;
  checkInit(braidCommGetTimeout(comm_, &seconds), "braidCommGetTimeout");
  return seconds;
}

namespace {

// Runs an operation's Braid call and completes its Work: with the outputs, or with the call's
// name and Braid's text (read on this thread: ncclGetLastError is per thread).
// `settle` runs after the call, before the work completes (so a waiter sees what it did).
void runAndComplete(WorkBraid& work, const char* call, ncclComm_t comm,
                    const std::function<ncclResult_t()>& body,
                    const std::function<void()>& settle = {}) {
  // Copies in the bodies (list forms) must not record autograd history.
  at::NoGradGuard noGrad;
  ncclResult_t r;
  std::string exceptionText;
  try {
    r = body();
  } catch (const std::exception& e) {
    r = ncclInternalError;
    exceptionText = e.what();
  }
  std::string text = r == ncclSuccess        ? ""
                     : exceptionText.empty() ? ncclGetLastError(comm)
                                             : exceptionText;
  if (settle) settle();
  if (r == ncclSuccess) {
    work.succeed();
    return;
  }
  // A deadline is not "remote process exited or there was a network error" (NCCL's text for
  // ncclRemoteError): say it timed out, as torch's other backends do, then Braid's text, which
  // names the silent rank.
  const bool timedOut = text.find("timed out after") != std::string::npos;
  work.failWith(std::string("braid ") + call + " failed: " +
                (timedOut ? "Timed out before a peer answered" : ncclGetErrorString(r)) + ": " +
                text);
}

}  // namespace

int ProcessGroupBraid::runTask(void* arg) {
  std::unique_ptr<Task> task(static_cast<Task*>(arg));
  if (task->timeout.count() < 0) {
    runAndComplete(*task->work, task->call, task->comm, task->body);
    return 0;
  }
  // A call's own timeout (c10d's options.timeout) bounds this call alone, as in gloo.
  double groupTimeout = 0;
  braidCommGetTimeout(task->comm, &groupTimeout);
  braidCommSetTimeout(task->comm, task->timeout.count() / 1000.0);
  runAndComplete(*task->work, task->call, task->comm, task->body,
                 [&] { braidCommSetTimeout(task->comm, groupTimeout); });
  return 0;  // errors live in the Work: the stream must keep running later tasks
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::enqueue(c10d::OpType type, const char* call,
                                                          std::vector<at::Tensor> outputs,
                                                          std::vector<at::Tensor> keepAlive,
                                                          std::function<ncclResult_t()> body) {
  requireOpen(call);
  // Every collective, on every rank, in call order (gloo counts the same way).
  if (sequenceNumber_.load() != 0) sequenceNumber_.fetch_add(1);
  auto work = c10::make_intrusive<WorkBraid>(rank_, type, std::move(outputs));
  auto* task = new Task{work, call, comm_, std::move(keepAlive), std::move(body), tCallTimeout};
  ncclResult_t r = braidStreamLaunchHostFunc(stream_, &ProcessGroupBraid::runTask, task);
  if (r != ncclSuccess) {
    delete task;
    TORCH_CHECK(false, "braid ", call,
                ": braidStreamLaunchHostFunc failed: ", ncclGetErrorString(r), ": ",
                ncclGetLastError(comm_));
  }
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::broadcast(std::vector<at::Tensor>& tensors,
                                                            const c10d::BroadcastOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const at::Tensor& t = singleTensor(tensors, "broadcast", "tensors", /*strided=*/true);
  checkRank(opts.rootRank, size_, "broadcast", "src");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, "braid broadcast: rootTensor=", opts.rootTensor,
                    " (one tensor per rank: must be 0)");
  ncclDataType_t type = toBraidType(t.scalar_type(), "broadcast", false);
  const Strided data(t);
  size_t n = t.numel();
  int root = static_cast<int>(opts.rootRank);
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::BROADCAST, "broadcast", {t}, {data.work}, [=] {
    data.in();
    void* p = data.work.data_ptr();
    ncclResult_t r = ncclBroadcast(p, p, n, type, root, comm, nullptr);
    if (r == ncclSuccess) data.out();
    return r;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::AllreduceOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].is_sparse())
    return sparseAllreduce(tensors[0], opts);
  const at::Tensor& t = singleTensor(tensors, "allreduce", "tensors", /*strided=*/true);
  const ReducePlan plan = planReduction(toBraidOp(opts.reduceOp, "allreduce", /*bitwise=*/true),
                                        t.scalar_type(), "allreduce");
  const Strided data(t);
  ncclComm_t comm = comm_;
  const int world = size_, rank = rank_;
  // Shared bucket memory (shared_allocator.h) is registered before the call is queued.
  // Registration is local in Braid: each allreduce's ranks tell each other whether their
  // buffers are registered, and take ZeroCopy only when every rank's are.
  registerSharedRange(comm, data.work.data_ptr(), data.work.nbytes());
  return enqueue(c10d::OpType::ALLREDUCE, "allreduce", {t}, {data.work}, [=] {
    data.in();
    ncclResult_t r = runReduction(plan, data.work, comm, world, rank, /*root=*/-1);
    if (r == ncclSuccess) data.out();
    return r;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  TORCH_CHECK_VALUE(!tensors.empty(), "braid allreduce_coalesced: tensors is empty");
  BraidReduceOp op = toBraidOp(opts.reduceOp, "allreduce_coalesced");
  struct Call {
    void* p;
    size_t n;
    ncclDataType_t type;
    at::ScalarType dtype;
  };
  std::vector<Call> calls;
  for (size_t i = 0; i < tensors.size(); i++) {
    checkTensor(tensors[i], "allreduce_coalesced", "tensors[" + std::to_string(i) + "]");
    calls.push_back({tensors[i].data_ptr(), static_cast<size_t>(tensors[i].numel()),
                     toBraidType(tensors[i].scalar_type(), "allreduce_coalesced", true),
                     tensors[i].scalar_type()});
  }
  ncclComm_t comm = comm_;
  for (const at::Tensor& t : tensors) registerSharedRange(comm, t.data_ptr(), t.nbytes());
  std::vector<at::ScalarType> dtypes;
  for (const Call& c : calls) dtypes.push_back(c.dtype);
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, "allreduce_coalesced", tensors, {}, [=] {
    return withReduceOpEach(op, dtypes, comm, [&](size_t i, ncclRedOp_t o) {
      return ncclAllReduce(calls[i].p, calls[i].p, calls[i].n, calls[i].type, o, comm, nullptr);
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce(std::vector<at::Tensor>& tensors,
                                                         const c10d::ReduceOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const at::Tensor& t = singleTensor(tensors, "reduce", "tensors", /*strided=*/true);
  checkRank(opts.rootRank, size_, "reduce", "dst");
  const ReducePlan plan = planReduction(toBraidOp(opts.reduceOp, "reduce", /*bitwise=*/true),
                                        t.scalar_type(), "reduce");
  const Strided data(t);
  const int root = static_cast<int>(opts.rootRank), world = size_, rank = rank_;
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::REDUCE, "reduce", {t}, {data.work}, [=] {
    data.in();
    ncclResult_t r = runReduction(plan, data.work, comm, world, rank, root);
    if (r == ncclSuccess && rank == root) data.out();
    return r;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const at::Tensor& in = singleTensor(inputs, "allgather", "input_tensors", /*strided=*/true);
  TORCH_CHECK_VALUE(outputs.size() == 1, "braid allgather: output_tensors holds ", outputs.size(),
                    " lists; the Braid backend takes exactly one");
  std::vector<at::Tensor>& outs = outputs[0];
  TORCH_CHECK_VALUE(static_cast<int>(outs.size()) == size_, "braid allgather: tensor_list holds ",
                    outs.size(), " tensors, the group has ", size_, " ranks");
  for (size_t i = 0; i < outs.size(); i++) {
    std::string what = "tensor_list[" + std::to_string(i) + "]";
    TORCH_CHECK_VALUE(
        outs[i].defined() && outs[i].device().is_cpu() && outs[i].layout() == at::kStrided,
        "braid allgather: ", what, " must be a dense CPU tensor");
    checkSameType(outs[i], in, "allgather", what);
    TORCH_CHECK_VALUE(outs[i].numel() == in.numel(), "braid allgather: ", what, " has ",
                      outs[i].numel(), " elements, the input has ", in.numel());
  }
  ncclDataType_t type = toBraidType(in.scalar_type(), "allgather", false);
  // One contiguous receive buffer, then a copy into each output (which may be strided).
  at::Tensor flat = at::empty({static_cast<int64_t>(size_) * in.numel()}, in.options());
  const Strided input(in);
  void* dst = flat.data_ptr();
  size_t n = in.numel();
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::ALLGATHER, "allgather", outs, {in, input.work, flat}, [=] {
    input.in();
    ncclResult_t r = ncclAllGather(input.work.data_ptr(), dst, n, type, comm, nullptr);
    if (r != ncclSuccess) return r;
    for (size_t i = 0; i < outs.size(); i++) {
      outs[i].copy_(flat.narrow(0, i * n, n).view(outs[i].sizes()));
    }
    return ncclSuccess;
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  checkTensor(input, "_allgather_base", "input_tensor", /*strided=*/true);
  checkTensor(output, "_allgather_base", "output_tensor");
  checkSameType(output, input, "_allgather_base", "output_tensor");
  TORCH_CHECK_VALUE(output.numel() == size_ * input.numel(), "braid _allgather_base: output has ",
                    output.numel(), " elements, expected world size ", size_, " x input's ",
                    input.numel());
  ncclDataType_t type = toBraidType(input.scalar_type(), "_allgather_base", false);
  const Strided in(input);
  void* dst = output.data_ptr();
  size_t n = input.numel();
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, "_allgather_base", {output}, {input, in.work}, [=] {
    in.in();
    return ncclAllGather(in.work.data_ptr(), dst, n, type, comm, nullptr);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  const at::Tensor& out = singleTensor(outputs, "reduce_scatter", "output");
  TORCH_CHECK_VALUE(inputs.size() == 1, "braid reduce_scatter: input_list holds ", inputs.size(),
                    " lists; the Braid backend takes exactly one");
  std::vector<at::Tensor>& ins = inputs[0];
  TORCH_CHECK_VALUE(static_cast<int>(ins.size()) == size_,
                    "braid reduce_scatter: input_list holds ", ins.size(),
                    " tensors, the group has ", size_, " ranks");
  for (size_t i = 0; i < ins.size(); i++) {
    std::string what = "input_list[" + std::to_string(i) + "]";
    TORCH_CHECK_VALUE(
        ins[i].defined() && ins[i].device().is_cpu() && ins[i].layout() == at::kStrided,
        "braid reduce_scatter: ", what, " must be a dense CPU tensor");
    checkSameType(ins[i], out, "reduce_scatter", what);
    TORCH_CHECK_VALUE(ins[i].numel() == out.numel(), "braid reduce_scatter: ", what, " has ",
                      ins[i].numel(), " elements, the output has ", out.numel());
  }
  // (Bool tensors as logical values, as all_reduce's: reduce_ops.h.)
  const ReducePlan plan = planReduction(toBraidOp(opts.reduceOp, "reduce_scatter"),
                                        out.scalar_type(), "reduce_scatter");
  const ncclDataType_t type = plan.type;
  const BraidReduceOp op = plan.op;
  at::ScalarType dtype = out.scalar_type();
  at::Tensor flat = at::empty({static_cast<int64_t>(size_) * out.numel()}, out.options());
  void* dst = out.data_ptr();
  size_t n = out.numel();
  ncclComm_t comm = comm_;
  std::vector<at::Tensor> keep(ins.begin(), ins.end());
  keep.push_back(flat);
  return enqueue(c10d::OpType::REDUCE_SCATTER, "reduce_scatter", {out}, keep, [=] {
    // Packs the inputs into one send buffer on the stream's thread, in queue order.
    for (size_t i = 0; i < ins.size(); i++) flat.narrow(0, i * n, n).copy_(ins[i].reshape(-1));
    return withReduceOp(op, dtype, comm, [&](ncclRedOp_t o) {
      return ncclReduceScatter(flat.data_ptr(), dst, n, type, o, comm, nullptr);
    });
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  checkTensor(input, "_reduce_scatter_base", "input", /*strided=*/true);
  checkTensor(output, "_reduce_scatter_base", "output");
  checkSameType(output, input, "_reduce_scatter_base", "output");
  TORCH_CHECK_VALUE(input.numel() == size_ * output.numel(),
                    "braid _reduce_scatter_base: input has ", input.numel(),
                    " elements, expected world size ", size_, " x output's ", output.numel());
  const ReducePlan plan = planReduction(toBraidOp(opts.reduceOp, "_reduce_scatter_base"),
                                        input.scalar_type(), "_reduce_scatter_base");
  const ncclDataType_t type = plan.type;
  const BraidReduceOp op = plan.op;
  at::ScalarType dtype = input.scalar_type();
  const Strided in(input);
  void* dst = output.data_ptr();
  size_t n = output.numel();
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, "_reduce_scatter_base", {output},
                 {input, in.work}, [=] {
                   in.in();
                   return withReduceOp(op, dtype, comm, [&](ncclRedOp_t o) {
                     return ncclReduceScatter(in.work.data_ptr(), dst, n, type, o, comm, nullptr);
                   });
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::postToPeer(c10d::OpType type, const char* call,
                                                             const at::Tensor& t, int peer,
                                                             int tag) {
  requireOpen(call);
  checkRank(peer, size_, call, type == c10d::OpType::SEND ? "dst" : "src");
  TORCH_CHECK_VALUE(peer != rank_, "braid ", call, ": ", type == c10d::OpType::SEND ? "dst" : "src",
                    "=", peer, " is this rank");
  const bool send = type == c10d::OpType::SEND;
  ncclDataType_t dtype = toBraidType(t.scalar_type(), call, false);
  void* p = t.data_ptr();
  size_t n = t.numel();
  auto work = c10::make_intrusive<WorkBraid>(rank_, type, std::vector<at::Tensor>{t});
  // The body holds the tensor until it has run.
  channels_->post(peer, send, tag,
                  [work, t, call, send, p, n, dtype](ncclComm_t comm, int peerInChannel,
                                                     const std::string& setupError) {
                    runAndComplete(*work, call, comm, [&]() -> ncclResult_t {
                      if (!comm) throw std::runtime_error(setupError);
                      return send ? ncclSend(p, n, dtype, peerInChannel, comm, nullptr)
                                  : ncclRecv(p, n, dtype, peerInChannel, comm, nullptr);
                    });
                  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::send(std::vector<at::Tensor>& tensors,
                                                       int dstRank, int tag) {
  return postToPeer(c10d::OpType::SEND, "send", singleTensor(tensors, "send", "tensor"), dstRank,
                    tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recv(std::vector<at::Tensor>& tensors,
                                                       int srcRank, int tag) {
  return postToPeer(c10d::OpType::RECV, "recv", singleTensor(tensors, "recv", "tensor"), srcRank,
                    tag);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                int tag) {
  requireOpen("recv");
  const at::Tensor& t = singleTensor(tensors, "recv", "tensor");
  TORCH_CHECK_VALUE(size_ > 1, "braid recv from any source: the group has no other rank");
  ncclDataType_t dtype = toBraidType(t.scalar_type(), "recv", false);
  void* p = t.data_ptr();
  size_t n = t.numel();
  auto work = c10::make_intrusive<WorkBraid>(rank_, c10d::OpType::RECVANYSOURCE,
                                             std::vector<at::Tensor>{t});
  channels_->postAnySource(size_, tag, [work, t, p, n, dtype](int source) -> PeerChannels::Body {
    return [work, t, p, n, dtype, source](ncclComm_t comm, int peerInChannel,
                                          const std::string& setupError) {
      work->setSourceRank(source);
      runAndComplete(*work, "recv from any source", comm, [&]() -> ncclResult_t {
        if (!comm) throw std::runtime_error(setupError);
        return ncclRecv(p, n, dtype, peerInChannel, comm, nullptr);
      });
    };
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupBraid::barrier(const c10d::BarrierOptions& opts) {
  CallTimeout callTimeout(opts.timeout);
  ncclComm_t comm = comm_;
  return enqueue(c10d::OpType::BARRIER, "barrier", {}, {}, [=] { return braidBarrier(comm); });
}

}  // namespace braid_torch
