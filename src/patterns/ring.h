// Ring topology math (pure): neighbours and which chunk a rank handles at each ring step.
#pragma once

namespace braid::patterns {

struct Ring {
  int rank;
  int nranks;
  int next() const { return (rank + 1) % nranks; }
  int prev() const { return (rank + nranks - 1) % nranks; }
  /// The chunk this rank works on `step` steps after owning chunk `rank` (steps go backwards so
  /// that what arrives from prev is the chunk prev worked on one step earlier).
  int chunkAt(int step) const { return ((rank - step) % nranks + nranks) % nranks; }
};

}  // namespace braid::patterns
