// A call, checked and described: what the API hands the executor. A plan says what runs (a
// collective with its buffers, count, type, op and root; a batch of sends and receives; or a
// piece of communicator management), on which communicator, on which stream and where its data
// moves. The algorithm and the fingerprint are added when it runs (the tuner's choice, the
// communicator's sequence number): every queue of the executor (executor.h) runs plans in the
// order of its communicator's calls.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/sendrecv_batch.h"
#include "nccl.h"

struct ncclComm;

namespace braid {

/// Where a plan's data moves.
enum class Target : uint8_t {
  kHost,          ///< host buffers, reduced by the CPU kernels
  kDeviceKernel,  ///< device buffers: one collective kernel launch (exec/device_launch.h)
  kDeviceP2p,     ///< device buffers moved on the GPUs over the P2P transport's device slots
  kDeviceStaged,  ///< device buffers staged through page-locked host memory over shm or TCP
  kHostOnStream,  ///< managed or page-locked host buffers on a CUDA stream: the host path, run
                  ///< as one host step in the stream's order
};

/// One buffer of a call, as the call uses it on this rank.
struct CallBuffer {
  const char* name;  ///< the argument's name, for errors ("sendbuff", "recvbuff")
  const void* ptr;
  size_t bytes;  ///< 0: not used by this rank (the buffer is not checked)
  bool input;    ///< the call reads it
  bool output;   ///< the call writes it
};

struct Plan {
  enum class Kind : uint8_t {
    kCollective,  ///< `coll`
    kSendRecv,    ///< `transfers`, progressing together
    kManagement,  ///< `manage`: init, split, shrink or finalize, deferred to a group's end or
                  ///< queued on a non-blocking communicator
  };
  Kind kind = Kind::kCollective;
  ncclComm* comm = nullptr;
  CollArgs coll;
  std::vector<Transfer> transfers;
  std::function<ncclResult_t()> manage;
  Target target = Target::kHost;
  /// kDeviceKernel: the stream was capturing a CUDA graph when the call was placed.
  bool capturing = false;
  /// The call's stream argument: a CUDA stream, a Braid host stream or NULL.
  void* stream = nullptr;

  /// The buffers the plan reads and writes on this rank, in a fixed order (placement checks
  /// them; staging substitutes copies in the same order: withBuffers).
  std::vector<CallBuffer> buffers() const;
  /// The same plan over other buffers (`staged[i]` for buffers()[i]).
  Plan withBuffers(const std::vector<void*>& staged) const;
};

}  // namespace braid
