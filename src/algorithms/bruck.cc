#include "algorithms/bruck.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "algorithms/primitives.h"
#include "util/status.h"

namespace braid {
namespace {

// Sends sendLen elements from `src` to `to` while receiving recvLen elements from `from`, one
// slot-sized piece of each in turn. Every rank sends piece i before it waits for piece i, so a
// blocked send always waits on a lower-numbered piece and the exchange cannot deadlock.
template <typename OnPiece>
ncclResult_t exchange(Context& ctx, const CollArgs& args, int to, const char* src, size_t sendLen,
                      int from, size_t recvLen, OnPiece onPiece) {
  Primitives out(ctx, args, std::span<const int>(), std::span<const int>(&to, 1));
  Primitives in(ctx, args, std::span<const int>(&from, 1), std::span<const int>());
  const size_t step = out.maxElems(), es = args.elemSize;
  for (size_t off = 0; off < std::max(sendLen, recvLen); off += step) {
    if (off < sendLen) BRAID_TRY(out.copySend(src + off * es, std::min(step, sendLen - off)));
    if (off < recvLen) BRAID_TRY(onPiece(in, off, std::min(step, recvLen - off)));
  }
  return ncclSuccess;
}

int stepCount(int n) {
  int k = 0;
  while ((1 << k) < n) k++;
  return k;
}

}  // namespace

// In pieces: above a size tied to the cache size, glibc's memcpy switches to non-temporal stores,
// and every rotated block is read again soon after. (The 4x slowdown first blamed on this came
// from misaligned scratch, see pageAlignedScratch; this effect alone is within the noise here.)
void cachedCopy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kPiece = 16 * 1024;
  for (size_t off = 0; off < bytes; off += kPiece)
    kernels::copy(static_cast<char*>(dst) + off, nullptr, static_cast<const char*>(src) + off,
                  std::min(kPiece, bytes - off));
}

BruckLayout BruckLayout::equalBlocks(int rank, int nranks, size_t count) {
  std::vector<size_t> starts(nranks + 1);
  for (int b = 0; b <= nranks; b++) starts[b] = static_cast<size_t>(b) * count;
  return BruckLayout(rank, nranks, std::move(starts));
}

BruckLayout::BruckLayout(int rank_, int nranks_, std::vector<size_t> blockStart)
    : rank(rank_), nranks(nranks_), absStart(std::move(blockStart)), relStart(nranks_ + 1, 0) {
  for (int j = 0; j < nranks; j++) {
    int b = (rank + j) % nranks;
    relStart[j + 1] = relStart[j] + (absStart[b + 1] - absStart[b]);
  }
}

void BruckLayout::rotateIn(const CollArgs& args, const void* in, void* rotated, bool preOp) const {
  const size_t es = args.elemSize, head = total() - absStart[rank];
  auto* src = static_cast<const char*>(in);
  auto* dst = static_cast<char*>(rotated);
  auto move = [&](char* to, const char* from, size_t n) {
    if (n == 0) return;
    if (preOp)
      kernels::reduce(args.op, to, nullptr, nullptr, from, n, kernels::kApplyPre);
    else
      cachedCopy(to, from, n * es);
  };
  move(dst, src + absStart[rank] * es, head);
  move(dst + head * es, src, absStart[rank]);
}

void BruckLayout::rotateOut(const CollArgs& args, const void* rotated, void* out) const {
  const size_t es = args.elemSize, head = total() - absStart[rank];
  auto* src = static_cast<const char*>(rotated);
  auto* dst = static_cast<char*>(out);
  cachedCopy(dst + absStart[rank] * es, src, head * es);
  cachedCopy(dst, src + head * es, absStart[rank] * es);
}

// Measured on the 2-rank allgather at 128 KiB: a scratch vector at page offset 16 made every
// memcpy to and from the page-aligned slots and user buffers ~4x slower (117-420 us vs 36 us).
char* pageAlignedScratch(std::vector<char>& storage, size_t bytes) {
  constexpr size_t kPage = 4096;
  if (storage.size() < bytes + kPage) storage.resize(bytes + kPage);
  auto addr = reinterpret_cast<uintptr_t>(storage.data());
  return storage.data() + ((kPage - addr % kPage) % kPage);
}

// The transpose of the allgather below, steps in reverse: before step k a rank holds partial
// results for relative blocks [0, min(2^(k+1), n)); it hands the upper part to the rank 2^k
// ahead (for which they are blocks [0, m)) and folds in what the rank 2^k behind hands it.
ncclResult_t runBruckReduceScatter(Context& ctx, const CollArgs& args, const BruckLayout& layout,
                                   void* acc, void* final) {
  const int n = layout.nranks, r = layout.rank;
  const size_t es = args.elemSize;
  auto* base = static_cast<char*>(acc);
  auto* result = static_cast<char*>(final);
  thread_local std::vector<char> piece;
  for (int k = stepCount(n) - 1; k >= 0; k--) {
    const int d = 1 << k, m = std::min(d, n - d);
    const std::vector<size_t>& rel = layout.relStart;
    auto fold = [&](Primitives& in, size_t off, size_t len) -> ncclResult_t {
      char* incoming = pageAlignedScratch(piece, len * es);
      BRAID_TRY(in.recv(incoming, len));
      // acc op incoming; the last step finishes relative block 0 (post-op applied).
      char* dst = (k == 0 ? result : base) + off * es;
      kernels::reduce(args.op, dst, nullptr, base + off * es, incoming, len,
                      k == 0 ? kernels::kApplyPost : 0u);
      return ncclSuccess;
    };
    BRAID_TRY(exchange(ctx, args, (r + d) % n, base + rel[d] * es, rel[d + m] - rel[d],
                       (r - d + n) % n, rel[m], fold));
  }
  return ncclSuccess;
}

// Before step k a rank holds relative blocks [0, 2^k); it sends the first m of them to the rank
// 2^k behind (for which they are blocks [2^k, 2^k + m)) and receives its own [2^k, 2^k + m) from
// the rank 2^k ahead.
ncclResult_t runBruckAllGather(Context& ctx, const CollArgs& args, const BruckLayout& layout,
                               void* buf) {
  const int n = layout.nranks, r = layout.rank;
  const size_t es = args.elemSize;
  auto* base = static_cast<char*>(buf);
  for (int k = 0; k < stepCount(n); k++) {
    const int d = 1 << k, m = std::min(d, n - d);
    const std::vector<size_t>& rel = layout.relStart;
    auto store = [&](Primitives& in, size_t off, size_t len) {
      return in.recv(base + (rel[d] + off) * es, len);
    };
    BRAID_TRY(exchange(ctx, args, (r - d + n) % n, base, rel[m], (r + d) % n, rel[d + m] - rel[d],
                       store));
  }
  return ncclSuccess;
}

}  // namespace braid
