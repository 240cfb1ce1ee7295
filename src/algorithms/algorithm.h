// Collective arguments as the algorithms see them, and the algorithm interface: an algorithm
// says what it is (its traits), whether it supports a call, and runs it; the tuner ranks the
// ones that support it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm_traits.h"
#include "algorithms/collectives.h"
#include "algorithms/context.h"
#include "algorithms/fingerprint.h"
#include "kernels/reduce.h"
#include "nccl.h"

namespace braid {

struct CollArgs {
  CollType coll = CollType::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  ///< elements (per rank, as in the NCCL call)
  size_t elemSize = 0;
  kernels::ReduceOp op;  ///< resolved op (avg/premulsum already folded in)
  int userOp = 0;        ///< the ncclRedOp_t as the caller passed it (what the logs name)
  int root = 0;
  bool reduction = true;  ///< false: data is copied, never combined (broadcast, allgather)
  /// The buffers are device memory and the communicator moves them over the P2P transport:
  /// copies and reductions run on the GPU, through the FIFOs' device slots.
  bool device = false;
  /// premulsum's scalar when it is device memory (ncclScalarDevice): read into op.scalar when
  /// the call runs, in stream order, as NCCL's kernels read it.
  const void* deviceScalar = nullptr;
  Fingerprint fingerprint;  ///< what every slot of this operation carries (set when it runs)

  size_t bytes() const { return count * elemSize; }
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  /// Its name, protocol, preference and cost shape: declared in its file, constant.
  virtual const AlgorithmTraits& traits() const = 0;
  const char* name() const { return traits().name; }
  /// Whether it can run `args` on this team. The answer may depend only on the collective, the
  /// message size, whether the buffers are device memory, and what init fixed (ranks,
  /// connections, settings): the tuner remembers it per (collective, size, device).
  virtual bool supports(const CollArgs& args, const Context& ctx) const = 0;
  /// Whether it can run a call on device buffers (CollArgs::device): it moves data only through
  /// the primitives (primitives.h), which move it on the GPU, and never reads a peer's memory.
  virtual bool movesDeviceMemory() const { return false; }
  virtual ncclResult_t run(const CollArgs& args, Context& ctx) const = 0;
};

}  // namespace braid
