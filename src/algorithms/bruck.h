// Bruck's dissemination steps, shared by the logarithmic allgather, reduce-scatter and allreduce.
// Each rank keeps its blocks rotated so that its own block comes first (relative block j is
// absolute block (rank + j) mod n); at step k a rank exchanges min(2^k, n - 2^k) consecutive
// relative blocks with the ranks 2^k away on either side. ceil(log2 n) steps for any rank count
// (at powers of two the same steps and volumes as recursive doubling and halving), and n-1
// blocks moved per rank in each direction, the bandwidth optimum.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/primitives.h"

namespace braid {

/// Where each relative block lies in a rank's rotated buffer (elements), for blocks whose sizes
/// may differ (an allreduce's count split n ways).
struct BruckLayout {
  BruckLayout(int rank, int nranks, std::vector<size_t> blockStart);
  /// n blocks of `count` elements each (allgather, reduce-scatter).
  static BruckLayout equalBlocks(int rank, int nranks, size_t count);
  int rank, nranks;
  std::vector<size_t> absStart;  ///< absolute block b starts at absStart[b]; absStart[n] = total
  std::vector<size_t> relStart;  ///< relative block j starts at relStart[j]; relStart[n] = total
  size_t total() const { return absStart[nranks]; }
  /// Copies (pre-op applied when `preOp`) the absolute-order `in` into rotated order `rotated`.
  void rotateIn(const CollArgs& args, const void* in, void* rotated, bool preOp) const;
  /// Copies rotated order back to absolute order.
  void rotateOut(const CollArgs& args, const void* rotated, void* out) const;
};

/// memcpy that keeps the destination in cache (see bruck.cc).
void cachedCopy(void* dst, const void* src, size_t bytes);

/// A page-aligned scratch area of `bytes` inside `storage` (grown as needed). Aligned like the
/// users' buffers and the FIFO slots, so memcpy between them does not hit 4 KiB aliasing.
char* pageAlignedScratch(std::vector<char>& storage, size_t bytes);

/// Reduce-scatter on the rotated buffer `acc` (pre-op already applied): on return relative
/// block 0 holds this rank's fully reduced block, post-op applied, in `final` (may equal acc).
ncclResult_t runBruckReduceScatter(Context& ctx, const CollArgs& args, const BruckLayout& layout,
                                   void* acc, void* final);

/// Allgather on the rotated buffer `buf` whose relative block 0 holds this rank's block: on
/// return every relative block is filled.
ncclResult_t runBruckAllGather(Context& ctx, const CollArgs& args, const BruckLayout& layout,
                               void* buf);

}  // namespace braid
