#include "tuner/adaptive.h"

#include <algorithm>
#include <cstdio>

#include "algorithms/algorithm.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {

ncclResult_t AdaptiveChoice::select(size_t bytes, Host& host, const Algorithm** algorithm,
                                    Entry** entry) {
  *algorithm = nullptr;
  *entry = nullptr;
  if (epoch_ == 0) return ncclSuccess;
  Entry& e = entries_[(bytes ^ (bytes >> 7) ^ (bytes >> 17)) % entries_.size()];
  if (!e.valid || e.bytes != bytes) {  // a new size (or another took the slot): start over
    e = Entry{};
    e.bytes = bytes;
    e.valid = true;
    e.candidates = host.nearCandidates(e.candidate.data(), kAdaptMaxCandidates);
  }
  if (e.candidates < 2) return ncclSuccess;
  // Each candidate in a block of consecutive calls: the first few absorb the switch (a rank that
  // runs ahead into the next call only does so once the previous ones are in the same rhythm),
  // the others are timed. Call by call, or one untimed and six timed, Direct measured twice its
  // time in a row at 128 KiB on two cores and lost to a ring 1.35x slower.
  const uint32_t block = kAdaptWarmCalls + kAdaptExploreCalls;
  const uint32_t explore = block * static_cast<uint32_t>(e.candidates);
  if (e.call == explore && !e.warm) {
    // A size's first calls run cold (slot pages touched for the first time: Direct's first five
    // calls at 256 KiB took 190 us, its later ones 40), so the first pass only warms every
    // candidate up, and the second decides.
    e.warm = true;
    e.call = 0;
    e.timed.fill(0);
    e.spentUs.fill(0.0);
  }
  if (e.call == explore) BRAID_TRY(agree(host, e));
  const bool exploring = e.call < explore;
  const int running = exploring ? static_cast<int>(e.call / block) : e.winner;
  e.timing = exploring && e.call % block >= kAdaptWarmCalls ? running : -1;
  *algorithm = e.candidate[static_cast<size_t>(running)];
  *entry = &e;
  // An epoch is at least the exploration and one call of the winner.
  if (++e.call >= std::max(epoch_, explore + 1)) e.call = 0;
  return ncclSuccess;
}

void AdaptiveChoice::record(Entry* entry, double us) {
  if (!entry || entry->timing < 0) return;
  const auto k = static_cast<size_t>(entry->timing);
  entry->spentUs[k] += us;
  entry->timed[k]++;
}

ncclResult_t AdaptiveChoice::agree(Host& host, Entry& e) {
  // Each rank's mean call of each candidate, summed over the ranks. The mean, because calls in
  // a row overlap (a rank that finished its part starts the next call while a peer still reads
  // its slot), so the mean is what the calls cost in a row; the median, or the fastest, missed
  // it: at 128 KiB on two cores they picked the ring, and Direct ran 1.4x faster in a row. The
  // block's untimed first call keeps the wait after work between calls out.
  std::array<double, kAdaptMaxCandidates> total{};
  for (int k = 0; k < e.candidates; k++) {
    const auto c = static_cast<size_t>(k);
    total[c] = e.timed[c] ? e.spentUs[c] / e.timed[c] : 0;
  }
  if (ncclResult_t r = host.agree(total.data(), e.candidates); r != ncclSuccess)
    return addContext(r, "the tuner's agreement on %zu-byte allreduces", e.bytes);
  int best = 0;
  for (int k = 1; k < e.candidates; k++)
    if (total[static_cast<size_t>(k)] < total[static_cast<size_t>(best)]) best = k;
  e.winner = best;
  char line[256] = "";
  int at = 0;
  for (int k = 0; k < e.candidates && at < static_cast<int>(sizeof(line)); k++)
    at += snprintf(line + at, sizeof(line) - static_cast<size_t>(at), " %s %.1f",
                   e.candidate[static_cast<size_t>(k)]->name(), total[static_cast<size_t>(k)]);
  BRAID_INFO(kSubsysTune, "%zu-byte allreduce, mean calls summed over the ranks (us):%s; %s runs",
             e.bytes, line, e.candidate[static_cast<size_t>(best)]->name());
  e.timed.fill(0);
  e.spentUs.fill(0.0);
  return ncclSuccess;
}

}  // namespace braid
