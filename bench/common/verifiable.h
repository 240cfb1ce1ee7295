// Inputs whose reduced result is known exactly, so that #wrong counts real mismatches.
//
// The values come from the generator the tests share (verifiable/exact_inputs.h, default
// bounds): small integers (+-1 and +-2 for prod) bounded so that, for every type, every partial
// result in any reduction order is exactly representable. ncclAvg on floats scales each input by
// 1/n rounded to the type and sums the rounded products (NCCL's premul-sum); the inputs are
// chosen so that those products are such integers too. A float average is still allowed one
// unit in the last place of the type; integer averages divide the sum and truncate.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace braid::bench {

/// What one checked collective call works on.
struct DataSpec {
  ncclDataType_t type = ncclFloat32;
  int opIndex = 0;  ///< index into kOpNames (kOpMulSum for the premul-sum op)
  int nranks = 1;
  std::uint64_t seed = 0;
};

/// The value rank `rank` contributes at element `index`.
double inputValue(const DataSpec& spec, int rank, std::size_t index);

/// The per-rank scalar of the mulsum op (ncclRedOpCreatePreMulSum): 1 or 2, exact in every type.
double premulScalar(int rank);
/// premulScalar(rank) encoded in the element type, for ncclRedOpCreatePreMulSum (8 bytes).
void encodePremulScalar(ncclDataType_t type, int rank, void* scalar8Bytes);

/// Writes elements [firstIndex, firstIndex + count) of rank's input at buffer[0 .. count).
void fillInput(void* buffer, std::size_t count, std::size_t firstIndex, const DataSpec& spec,
               int rank);

/// Fills an output buffer with a value no correct result can have (NaN for floating types, the
/// most negative value for signed and the largest for unsigned integers), so an element a
/// collective forgot to write is always counted as wrong.
void poisonOutput(void* buffer, std::size_t count, ncclDataType_t type);

/// Counts elements of buffer[0 .. count) that no longer hold poisonOutput's value: writes into an
/// output that the collective must leave alone (ncclReduce's receive buffer on other ranks).
std::int64_t countOverwritten(const void* buffer, std::size_t count, ncclDataType_t type);

/// Counts elements of result[0 .. count) that differ from the reduction over all ranks of
/// elements [firstIndex, firstIndex + count) (exact; one unit in the last place for avg).
std::int64_t countWrongReduced(const void* result, std::size_t count, std::size_t firstIndex,
                               const DataSpec& spec);

/// Counts elements of result[0 .. count) that differ from rank sourceRank's input elements
/// [firstIndex, firstIndex + count): the check for collectives that move data unchanged.
std::int64_t countWrongCopied(const void* result, std::size_t count, std::size_t firstIndex,
                              const DataSpec& spec, int sourceRank);

}  // namespace braid::bench
