#include "algorithms/rank_order.h"

#include <algorithm>
#include <vector>

namespace braid {

void reduceInRankOrder(const kernels::ReduceOp* ops, const char* const* terms, int n, size_t count,
                       size_t elemSize, char* dst) {
  constexpr size_t kAccumulatorBytes = 128 * 1024;
  const size_t es = elemSize, chunk = std::max<size_t>(64, kAccumulatorBytes / es);
  thread_local std::vector<char> acc;
  if (acc.size() < chunk * es) acc.resize(chunk * es);
  const unsigned pre = kernels::kApplyPre, last = kernels::kApplyPre | kernels::kApplyPost;
  for (size_t done = 0; done < count; done += chunk) {
    const size_t len = std::min(chunk, count - done), at = done * es;
    char* out = dst + at;
    if (n == 1) {
      kernels::reduce(ops[0], out, nullptr, nullptr, terms[0] + at, len, last);
      continue;
    }
    int k = 0;
    if (!ops[0].preMul) {  // the first two terms combine in one pass
      kernels::reduce(ops[0], n == 2 ? out : acc.data(), nullptr, terms[0] + at, terms[1] + at, len,
                      n == 2 ? last : pre);
      k = 2;
    }
    for (; k < n; k++)  // term k with rank k's own PreMulSum scalar
      kernels::reduce(ops[k], k == n - 1 ? out : acc.data(), nullptr, k == 0 ? nullptr : acc.data(),
                      terms[k] + at, len, k == n - 1 ? last : pre);
  }
}

}  // namespace braid
