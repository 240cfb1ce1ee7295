// Shared by the shrink, revoke and non-blocking tests: allreduces whose every element is checked
// against the exact sum over the ranks that should be in the communicator, and waiting for a
// non-blocking communicator to settle.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"

namespace braid::shrinktest {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Polls ncclCommGetAsyncError until it leaves ncclInProgress (or `limitS` passes); returns the
/// final state, or ncclInProgress on time-out.
inline ncclResult_t settle(ncclComm_t comm, double limitS = 60) {
  const double end = now() + limitS;
  ncclResult_t state = ncclInProgress;
  while (now() < end) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
    if (state != ncclInProgress) return state;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return state;
}

/// What a rank known by `id` (its rank in the original communicator) contributes at element i:
/// small integers, so sums are exact in int32 and float alike.
inline int32_t contribution(int id, size_t i, int salt) {
  return (id + 1) * 1000 + static_cast<int32_t>((i * 7 + static_cast<size_t>(salt)) % 997);
}

/// Counts that cover one element, a prime, and several FIFO slots at the default slot size.
inline const std::vector<size_t>& checkedCounts() {
  static const std::vector<size_t> counts = {1, 1021, 300007};
  return counts;
}

/// Allreduces (int32 and float sums, out-of-place, poisoned outputs) on `comm`, where this rank is
/// `me` of the original numbering and `members` are the original ranks `comm` should hold.
/// Returns "" when every element is the exact sum, otherwise what went wrong.
/// With `nonblocking`, each call must return ncclInProgress and the state must settle to success.
inline std::string allReduceChecked(ncclComm_t comm, int me, const std::vector<int>& members,
                                    int salt, bool nonblocking = false) {
  for (size_t count : checkedCounts()) {
    std::vector<int32_t> isend(count), irecv(count, -7);
    std::vector<float> fsend(count), frecv(count, -7.0f);
    for (size_t i = 0; i < count; i++) {
      isend[i] = contribution(me, i, salt);
      fsend[i] = static_cast<float>(contribution(me, i, salt + 1));
    }
    for (int type = 0; type < 2; type++) {
      ncclResult_t r = type == 0 ? ncclAllReduce(isend.data(), irecv.data(), count, ncclInt32,
                                                 ncclSum, comm, nullptr)
                                 : ncclAllReduce(fsend.data(), frecv.data(), count, ncclFloat32,
                                                 ncclSum, comm, nullptr);
      const std::string what =
          std::string(type == 0 ? "int32" : "float") + " allreduce of " + std::to_string(count);
      if (nonblocking) {
        if (r != ncclInProgress)
          return what + " on a non-blocking communicator returned " + std::to_string(r) +
                 " instead of ncclInProgress: " + ncclGetLastError(comm);
        r = settle(comm);
      }
      if (r != ncclSuccess)
        return what + " failed (" + std::to_string(r) + "): " + ncclGetLastError(comm);
    }
    for (size_t i = 0; i < count; i++) {
      int64_t iexpect = 0, fexpect = 0;
      for (int m : members) {
        iexpect += contribution(m, i, salt);
        fexpect += contribution(m, i, salt + 1);
      }
      if (irecv[i] != iexpect)
        return "int32 count " + std::to_string(count) + " element " + std::to_string(i) + ": " +
               std::to_string(irecv[i]) + ", expected " + std::to_string(iexpect);
      if (frecv[i] != static_cast<float>(fexpect))
        return "float count " + std::to_string(count) + " element " + std::to_string(i) + ": " +
               std::to_string(frecv[i]) + ", expected " + std::to_string(fexpect);
    }
  }
  return "";
}

/// The original ranks 0..n-1 without `excluded`.
inline std::vector<int> survivorsOf(int n, const std::vector<int>& excluded) {
  std::vector<int> out;
  for (int r = 0; r < n; r++) {
    bool gone = false;
    for (int e : excluded) gone = gone || e == r;
    if (!gone) out.push_back(r);
  }
  return out;
}

}  // namespace braid::shrinktest
