// ProcessGroupBraid: torch.distributed's c10d::ProcessGroup over a Braid communicator, so that
// DistributedDataParallel (and dist.* calls) run their collectives through Braid on CPU tensors.
//
// Every call checks its tensors on the caller's thread (bad input raises there), then queues one
// host function on the group's braidStream_t and returns a WorkBraid at once. The stream's thread
// runs the queued operations in order, each a blocking Braid call on the NULL stream, and
// completes its Work: with the outputs, or with Braid's error text (ncclGetLastError is per
// thread, so it is read on the thread that failed). The host function always returns 0, so a
// failure never leaves the stream skipping later work: every Work completes; after a failure the
// communicator is failed and later calls fail at once with the same text. Sends and receives run
// on channels of their own (peer_channels.h), so no posting order of them can deadlock.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#if BRAID_TORCH_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif

#include "braid/braid.h"
#include "nccl.h"
#include "peer_channels.h"

namespace braid_torch {

// PyTorch 1.x: a backend is a c10d::ProcessGroup, returned to Python as the group itself.
// PyTorch 2.x: a backend is a c10d::Backend that torch's ProcessGroup dispatches to per device
// type (register_backend(..., devices=["cpu"])); the operations it overrides are the same.
#if BRAID_TORCH_MAJOR >= 2
using TorchBackendBase = c10d::Backend;
#else
using TorchBackendBase = c10d::ProcessGroup;
#endif

class ProcessGroupBraid : public TorchBackendBase {
 public:
  /// Rendezvous through `store` (rank 0 publishes a fresh ncclUniqueId, the others read it) and
  /// ncclCommInitRank. `timeout` becomes the communicator's deadline unless BRAID_TIMEOUT_S is set.
  ProcessGroupBraid(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout);
  ~ProcessGroupBraid() override;

  const std::string getBackendName() const override { return "braid"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  // process_group_exchange.cc: gather, scatter, all_to_all, allgather_coalesced.
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
#if BRAID_TORCH_MAJOR >= 2
  // process_group_coalesced.cc: what torch.distributed._coalescing_manager calls in 2.x.
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
#endif
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // sequence_number.cc: gloo's sequence number (rank 0's random start, +1 per collective).
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;
  // monitored_barrier.cc: gloo's monitored barrier (rank 0 names the ranks that did not arrive).
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;

#if BRAID_TORCH_MAJOR >= 2
  // destroy_process_group: the communicator, stream and channels go at once (Python may still
  // hold the group); later calls raise. abort() does not wait for the peers.
  void shutdown() override {
    release(false);
  }
  void abort() override {
    release(true);
  }
#endif

  /// The communicator's deadline in seconds (0: none), for tests and diagnostics.
  double commTimeoutSeconds() const;

 private:
  // Queues `body` (a blocking Braid call on comm_) on the stream; the Work completes with
  // `outputs` when it returns ncclSuccess, else with "braid <call> failed: <Braid's text>".
  // `keepAlive` holds any other tensor the body reads until it has run.
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, const char* call,
                                         std::vector<at::Tensor> outputs,
                                         std::vector<at::Tensor> keepAlive,
                                         std::function<ncclResult_t()> body);

  // Queues a send or receive of `t` on the channel for (peer, direction, tag) (peer_channels.h).
  c10::intrusive_ptr<c10d::Work> postToPeer(c10d::OpType type, const char* call,
                                            const at::Tensor& t, int peer, int tag);

  // process_group_sparse.cc: all_reduce of a sparse COO tensor (SUM), as gloo does it.
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(const at::Tensor& t,
                                                 const c10d::AllreduceOptions& opts);

  // Hands a call's options.timeout to enqueue (per thread), for the call's scope.
  struct CallTimeout {
    explicit CallTimeout(std::chrono::milliseconds timeout);
    ~CallTimeout();
  };

  // Ends the group's work and frees the communicator (the destructor, shutdown, abort).
  void release(bool abort);
  // Raises when the group was shut down.
  void requireOpen(const char* call) const;

  struct Task;
  static int runTask(void* task);

  c10::intrusive_ptr<c10d::Store> store_;    // the group's (prefixed) store
  uint64_t monitoredBarriers_ = 0;           // calls so far: each call's keys are its own
  std::atomic<uint64_t> sequenceNumber_{0};  // 0: not set (setSequenceNumberForGroup)
  ncclComm_t comm_ = nullptr;
  braidStream_t stream_ = nullptr;
  std::unique_ptr<PeerChannels> channels_;
};

}  // namespace braid_torch
