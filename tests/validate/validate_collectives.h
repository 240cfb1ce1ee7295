// One validation case: a collective on one (type, op, values, count, root), run through Braid
// and through Open MPI on the same inputs in the same processes, then compared element by
// element on every rank that has a result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <mpi.h>

#include "nccl.h"
#include "validate_data.h"

namespace braid::validate {

enum class Collective {
  kAllReduce,
  kReduce,
  kReduceScatter,
  kBroadcast,
  kAllGather,
  kAlltoAll,
  kGather,
  kScatter,
  kSendRecv,
};
inline constexpr int kNumCollectives = 9;
const char* collectiveName(Collective coll);
bool isReducing(Collective coll);
bool isRooted(Collective coll);

struct Case {
  Collective coll;
  ValueSpec spec;     ///< type, op (reducing collectives), values, nranks, seed
  std::size_t count;  ///< the NCCL count argument (per rank for the per-rank collectives)
  int root = 0;
  /// Self-test: alter Braid's first output element before comparing (a test that the
  /// comparison catches a one-unit error); every such case must then report a mismatch.
  bool perturb = false;
};

/// This rank's share of a case's outcome.
struct CaseResult {
  std::int64_t compared = 0;    ///< elements compared on this rank
  std::int64_t mismatches = 0;  ///< elements out of bounds (or different, where exact)
  double worstRatio = 0;        ///< max |Braid - MPI| / allowed over inexact elements
  std::string firstMismatch;    ///< "where: Braid x, MPI y, allowed z" for the report
};

/// Runs the case on this rank (every rank of comm and of MPI_COMM_WORLD calls it alike).
/// Braid runs out of place and, where NCCL defines it, in place; both results are compared.
CaseResult runCase(const Case& c, ncclComm_t comm, int rank);

}  // namespace braid::validate
