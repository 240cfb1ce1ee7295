// Collectives on device buffers. Where every pair of ranks is connected by the P2P transport
// (transports/p2p), the call is one step enqueued on the user's CUDA stream: a host thread, in
// stream order, runs the collective with its copies and reductions on the GPU (runDirect).
// Over the host transports (shared memory, TCP) it is three steps:
//   1. copy the device inputs into page-locked host staging,
//   2. run the host collective on the staging copies (a host thread, in stream order),
//   3. copy the staged outputs back to the device buffers.
// Either way the call is asynchronous to the host exactly as an NCCL call is
// (cudaStreamSynchronize completes it).
// placeCall decides whether a call takes this path and rejects what cannot run: host and device
// buffers mixed, memory or a stream of another device, CUDA-graph capture.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "nccl.h"

struct ncclComm;

namespace braid {

/// One buffer of a call, as the call uses it.
struct CallBuffer {
  const char* name;  ///< the argument's name, for errors ("sendbuff", "recvbuff")
  const void* ptr;
  size_t bytes;  ///< 0: not used by this rank (the buffer is not checked)
  bool input;    ///< the call reads it
  bool output;   ///< the call writes it
};

/// Sets `*onDevice` when the call's buffers are device memory (then runStaged must run it);
/// false: host memory, the host path runs it. Errors name the argument and its value.
ncclResult_t placeCall(ncclComm* comm, const std::vector<CallBuffer>& buffers, void* stream,
                       bool* onDevice);

/// The host collective on staged copies: `staged[i]` stands for `buffers[i].ptr`.
using StagedWork = std::function<ncclResult_t(const std::vector<void*>& staged)>;

/// Enqueues steps 1-3 on `stream` and returns. A failure of the host collective becomes the
/// communicator's asynchronous error (ncclCommGetAsyncError), as in NCCL.
ncclResult_t runStaged(ncclComm* comm, void* stream, const std::vector<CallBuffer>& buffers,
                       StagedWork work);

/// Enqueues `work` on `stream` as one host step in the communicator's issue order, and returns.
/// Over the P2P transport (ncclComm::deviceDirect) the work is the collective itself, moving the
/// device buffers on the GPU; runStaged wraps it in its copies. A failure becomes the
/// communicator's asynchronous error.
ncclResult_t runDirect(ncclComm* comm, void* stream, std::function<ncclResult_t()> work);

/// Runs a synchronous host-path call in the communicator's issue order: when device-buffer calls
/// are still queued on streams, it waits until their host steps have run (NCCL runs a
/// communicator's operations in the order they were issued, whatever streams they name).
ncclResult_t runInTurn(ncclComm* comm, const std::function<ncclResult_t()>& task);

/// Per-communicator staging memory, one block per stream: calls on one stream run in order, so
/// a stream's block is reused by each call once the previous call's outputs are copied out.
class StagingPool {
 public:
  ~StagingPool();
  /// A block of at least `bytes` for `stream`; a larger need replaces the stream's block (the
  /// old one is kept until destruction, since work already queued may still use it).
  char* acquire(void* stream, size_t bytes);

 private:
  struct Block {
    void* stream;
    char* data;
    size_t bytes;
    class DeviceRuntime* runtime;  ///< the runtime that allocated it, which frees it
  };
  std::vector<Block> current_;
  std::vector<Block> retired_;
};

/// The device the calling thread has current (recorded by commInit); -1 without devices.
int initDevice();

}  // namespace braid
