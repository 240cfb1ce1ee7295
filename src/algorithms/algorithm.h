// Collective arguments as the algorithms see them, and the algorithm interface: an algorithm
// says whether it supports a call and runs it; the selector tries them in order of preference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/fingerprint.h"
#include "kernels/reduce.h"
#include "nccl.h"

namespace braid {

enum class CollType { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter };
const char* collName(CollType c);

struct CollArgs {
  CollType coll = CollType::kAllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;  ///< elements (per rank, as in the NCCL call)
  size_t elemSize = 0;
  kernels::ReduceOp op;  ///< resolved op (avg/premulsum already folded in)
  int root = 0;
  bool reduction = true;  ///< false: data is copied, never combined (broadcast, allgather)
  /// The buffers are device memory and the communicator moves them over the P2P transport:
  /// copies and reductions run on the GPU, through the FIFOs' device slots.
  bool device = false;
  /// premulsum's scalar when it is device memory (ncclScalarDevice): read into op.scalar when
  /// the call runs, in stream order (readDeviceScalar), as NCCL's kernels read it.
  const void* deviceScalar = nullptr;
  Fingerprint fingerprint;  ///< what every slot of this operation carries (set when it runs)
};

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual const char* name() const = 0;
  virtual bool supports(const CollArgs& args, const ncclComm& comm) const = 0;
  /// Whether it can run a call on device buffers (CollArgs::device): it moves data only through
  /// the primitives (primitives.h), which move it on the GPU, and never reads a peer's memory.
  virtual bool movesDeviceMemory() const { return false; }
  virtual ncclResult_t run(const CollArgs& args, ncclComm& comm) const = 0;
};

/// The algorithm runCollective would run `args` with (NCCL_ALGO filters, the cost model ranks
/// what is left); nullptr when NCCL_ALGO leaves none. `skip` (if set) is never chosen: an
/// algorithm that hands a call over to the others.
const Algorithm* chooseAlgorithm(const ncclComm& comm, const CollArgs& args,
                                 const Algorithm* skip = nullptr);
/// Picks the algorithm for `args` (chooseAlgorithm) and runs it.
ncclResult_t runCollective(ncclComm& comm, CollArgs& args);

/// The registered algorithms of a collective, in default preference order.
const std::vector<const Algorithm*>& algorithmsFor(CollType coll);

}  // namespace braid
