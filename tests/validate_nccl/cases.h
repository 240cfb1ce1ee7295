// The cases of the NCCL-versus-Braid validation: what each collective reads and writes on each
// rank, the inputs (from validate_data.h: a function of seed, rank and element, so two processes
// make identical inputs without talking), and the difference allowed between two libraries'
// outputs.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "validate_data.h"

namespace braid::validate_nccl {

using validate::Op;
using validate::Values;

enum class Coll : std::int32_t {
  kAllReduce,
  kReduce,
  kReduceScatter,
  kBroadcast,
  kAllGather,
  kAlltoAll,     ///< grouped ncclSend/ncclRecv, as nccl-tests does it
  kGather,       ///< grouped ncclSend/ncclRecv
  kScatter,      ///< grouped ncclSend/ncclRecv
  kSendRecv,     ///< ring shift: send to rank+1, receive from rank-1, in one group
  kAlltoAllApi,  ///< NCCL 2.28's ncclAlltoAll
  kGatherApi,    ///< ncclGather
  kScatterApi,   ///< ncclScatter
};
inline constexpr int kNumColls = 12;
const char* collName(Coll coll);
bool isReducing(Coll coll);
bool isRooted(Coll coll);
bool hasInPlace(Coll coll);

/// Identifies one rank's output of one call; both results files are lined up by it.
struct CaseKey {
  std::int32_t coll = 0;
  std::int32_t type = 0;
  std::int32_t op = -1;      ///< validate::Op of a reducing collective; -1 for copies
  std::int32_t values = 0;   ///< validate::Values (reductions); kExact for copies
  std::int32_t root = 0;     ///< 0 where the collective has no root
  std::int32_t inPlace = 0;  ///< 1: NCCL's in-place layout
  std::int32_t rank = 0;
  std::int32_t reserved = 0;
  std::uint64_t count = 0;  ///< the NCCL count argument (per rank where NCCL's is)
  auto operator<=>(const CaseKey&) const = default;
};

/// "allreduce float32 sum real count 1021 in place rank 0".
std::string describe(const CaseKey& key);

/// Buffers of one rank, in elements. Out of place: send holds the input, recv is poisoned, the
/// output is recv[outputAt, outputAt + output). In place: one buffer of `buffer` elements holds
/// the input at inputAt (poison elsewhere) and is passed as send + sendAt and recv + recvAt.
struct Layout {
  std::size_t send = 0, recv = 0;
  std::size_t buffer = 0, inputAt = 0, sendAt = 0, recvAt = 0;
  std::size_t outputAt = 0, output = 0;
  bool hasOutput = true;    ///< false where NCCL leaves recvbuff undefined (non-roots)
  bool placesInput = true;  ///< in-place broadcast: only the root's buffer holds an input
};
Layout layoutOf(const CaseKey& key, int nranks);

validate::ValueSpec specOf(const CaseKey& key, int nranks, std::uint64_t seed);

/// The key's rank's input: values from validate_data for reductions (elements of the key's
/// type), random bytes (NaN and infinity codes included) for copies.
void fillInput(const CaseKey& key, int nranks, std::uint64_t seed, unsigned char* out,
               std::size_t elements);

/// Largest |a - b| allowed between two libraries' output element `index` (0: bitwise, except
/// the sign of a zero from max/min). Both libraries reduce in the element type.
double allowedDifference(const CaseKey& key, int nranks, std::uint64_t seed, std::size_t index);

/// What every library must output at 1 rank, where the collectives reduce nothing: the input
/// (copies, sum, prod, max, min, avg) or round(x * s) once (premul-sum). nranks must be 1.
std::vector<unsigned char> oneRankOutput(const CaseKey& key, std::uint64_t seed);

/// Every call of a run: rank 0's key for each (collective, type, op, values, count, root,
/// in place); the worker makes one record per rank with output.
std::vector<CaseKey> enumerateCases(int nranks, const std::vector<std::size_t>& counts,
                                    const std::vector<Coll>& colls);

}  // namespace braid::validate_nccl
