// Algorithm choice per call. NCCL_ALGO filters (a list such as "Tree", "ring,tree", "^tree", or
// the per-collective form "allreduce:tree;broadcast:ring"); among the algorithms it leaves that
// support the call, Self (one rank) and the always-preferred ones come first, then the cost model
// (cost_model.h) ranks the rest and the cheapest runs. The model's inputs are the same on every
// rank of a communicator (commInit), so every rank makes the same choice.
#include <strings.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "algorithms/adaptive_choice.h"
#include "algorithms/algorithm.h"
#include "algorithms/cost_model.h"
#include "algorithms/mismatch_watch.h"
#include "algorithms/registry.h"
#include "core/comm.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

// Chosen whenever they support the call (and NCCL_ALGO allows them), before any ranking: Self
// for one rank, then algorithms that beat every other one where they apply at all (ZeroCopy on
// registered buffers, LowLatency up to one mailbox entry: docs/performance.md).
constexpr const char* kAlwaysPreferred[] = {"Self", "ZeroCopy", "LowLatency"};

bool equalNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The algorithm list NCCL_ALGO gives for this collective ("" = no constraint). Parsed on every
// call without streams or allocations: a stringstream costs about a
// microsecond, which small collectives notice.
std::string_view algoSpecFor(std::string_view env, CollType coll) {
  if (env.find(':') == std::string_view::npos) return env;
  while (!env.empty()) {
    size_t end = std::min(env.find(';'), env.size());
    std::string_view part = env.substr(0, end);
    env.remove_prefix(std::min(end + 1, env.size()));
    size_t colon = part.find(':');
    if (colon != std::string_view::npos && equalNoCase(part.substr(0, colon), collName(coll)))
      return part.substr(colon + 1);
  }
  return {};
}

bool allowedBySpec(std::string_view spec, const char* name) {
  if (spec.empty()) return true;
  bool exclude = spec[0] == '^';
  if (exclude) spec.remove_prefix(1);
  bool listed = false;
  for (;;) {
    size_t end = std::min(spec.find(','), spec.size());
    if (equalNoCase(spec.substr(0, end), name)) listed = true;
    if (end == spec.size()) break;
    spec.remove_prefix(end + 1);
  }
  return exclude ? !listed : listed;
}

bool sameModel(const CommCostModel& a, const CommCostModel& b) {
  return a.link == b.link && a.cost.alphaUs == b.cost.alphaUs && a.cost.gbps == b.cost.gbps &&
         a.cost.reduceGbps == b.cost.reduceGbps && a.oversubscribe == b.oversubscribe &&
         a.slotBytes == b.slotBytes;
}

// NCCL_PROTO's names for how an algorithm moves data: LowLatency is Braid's LL (data and flag
// in one cache line); every other algorithm moves slots with a separate flag, NCCL's Simple.
const char* protocolOf(const Algorithm* a) {
  return a == lowLatencyAllReduce() ? "LL" : "Simple";
}

// kAlwaysPreferred's algorithms of one collective, in that order. Looked up by name once:
// comparing names on every call cost small collectives a tenth of their time.
const std::vector<const Algorithm*>& preferredFor(CollType coll) {
  static const auto table = [] {
    std::array<std::vector<const Algorithm*>, 5> t;
    for (size_t c = 0; c < t.size(); c++)
      for (const char* name : kAlwaysPreferred)
        for (const Algorithm* a : algorithmsFor(static_cast<CollType>(c)))
          if (strcasecmp(a->name(), name) == 0) t[c].push_back(a);
    return t;
  }();
  return table[static_cast<size_t>(coll)];
}

// A collective's algorithms in the model's order (cheapest first; ties in registry order) for
// one message size. Remembered per thread: the estimates of every candidate cost a few
// microseconds on a small host, which small collectives would notice. The key is everything the
// estimates read, so an entry can never be stale.
struct Ranking {
  CommCostModel model;
  int nranks = 0;
  CollType coll = CollType::kAllReduce;
  size_t bytes = 0;
  bool valid = false;
  std::vector<const Algorithm*> order;
  std::vector<double> us;  ///< the estimates, in the same order
};

const Ranking& rankingFor(const ncclComm& comm, const CollArgs& args) {
  thread_local std::array<Ranking, 64> memo;
  const size_t bytes = args.count * args.elemSize;
  Ranking& r = memo[(bytes ^ (bytes >> 9) ^ (static_cast<size_t>(args.coll) * 7919)) % memo.size()];
  if (r.valid && r.nranks == comm.nranks && r.coll == args.coll && r.bytes == bytes &&
      sameModel(r.model, comm.costModel))
    return r;
  CollArgs sized;  // the estimates read the collective and the size only
  sized.coll = args.coll;
  sized.count = args.count;
  sized.elemSize = args.elemSize;
  const auto& algos = algorithmsFor(args.coll);
  std::vector<std::pair<double, const Algorithm*>> costs;
  for (const Algorithm* a : algos)
    costs.push_back({estimateCollectiveUs(comm, sized, a->name()), a});
  std::stable_sort(costs.begin(), costs.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  r.order.clear();
  r.us.clear();
  for (const auto& [us, a] : costs) {
    r.order.push_back(a);
    r.us.push_back(us);
  }
  r.model = comm.costModel;
  r.nranks = comm.nranks;
  r.coll = args.coll;
  r.bytes = bytes;
  r.valid = true;
  return r;
}

// Whether `a` may run `args`: NCCL_ALGO and NCCL_PROTO allow it and it supports the call.
bool usable(const ncclComm& comm, const CollArgs& args, const Algorithm* a, const Algorithm* skip) {
  if (a == skip || (args.device && !a->movesDeviceMemory())) return false;
  if (a == selfCollective()) return a->supports(args, comm);
  return allowedBySpec(algoSpecFor(comm.config.algo, args.coll), a->name()) &&
         allowedBySpec(algoSpecFor(comm.config.proto, args.coll), protocolOf(a)) &&
         a->supports(args, comm);
}

}  // namespace

const Algorithm* chooseAlgorithm(const ncclComm& comm, const CollArgs& args,
                                 const Algorithm* skip) {
  for (const Algorithm* a : preferredFor(args.coll))
    if (usable(comm, args, a, skip)) return a;
  for (const Algorithm* a : rankingFor(comm, args).order)
    if (usable(comm, args, a, skip)) return a;
  return nullptr;
}

int nearCandidates(const ncclComm& comm, const CollArgs& args, const Algorithm** out, int max) {
  for (const Algorithm* a : preferredFor(args.coll))
    if (usable(comm, args, a, nullptr)) return 0;
  const Ranking& r = rankingFor(comm, args);
  int n = 0;
  double best = 0;
  for (size_t i = 0; i < r.order.size() && n < max; i++) {
    if (!usable(comm, args, r.order[i], nullptr)) continue;
    if (n == 0) best = r.us[i];
    if (n > 0 && r.us[i] > kAdaptSpread * best) break;
    out[n++] = r.order[i];
  }
  return n;
}

ncclResult_t runCollective(ncclComm& comm, CollArgs& args) {
  // Before this call's opCount: the agreement, when due, is a collective of its own.
  const Algorithm* adapted = nullptr;
  AdaptiveChoice::Entry* adaptive = nullptr;
  BRAID_TRY(comm.adaptive.select(comm, args, &adapted, &adaptive));
  comm.opCount++;
  // The zero-copy algorithms' quiet period after a round without registrations (zero_copy.h).
  if (comm.zeroCopyQuiet > 0) comm.zeroCopyQuiet--;
  const size_t bytes = args.count * args.elemSize;
  const Algorithm* chosen;
  if (comm.lastChoice.coll == static_cast<int>(args.coll) && comm.lastChoice.bytes == bytes &&
      comm.lastChoice.device == args.device) {
    chosen = comm.lastChoice.algorithm;
  } else {
    chosen = chooseAlgorithm(comm, args);
    comm.lastChoice = {static_cast<int>(args.coll), bytes, args.device, chosen};
  }
  if (adapted) chosen = adapted;
  // NCCL_PROTO takes NCCL_ALGO's syntax: Simple is every algorithm's protocol but LowLatency's,
  // which is LL (allreduce up to one mailbox entry, peers sharing memory); LL128 is a GPU
  // protocol. A spec can leave nothing that runs the call.
  if (!chosen && !comm.config.proto.empty())
    return fail(ncclInvalidUsage,
                "NCCL_ALGO=%s and NCCL_PROTO=%s leave no algorithm for %s of %zu bytes on %d "
                "ranks: Braid's protocols are Simple (every algorithm) and LL (allreduce up to "
                "%zu bytes between ranks that share memory); LL128 is a GPU protocol",
                comm.config.algo.c_str(), comm.config.proto.c_str(), collName(args.coll), bytes,
                comm.nranks, kMailboxBytes);
  if (!chosen && args.device)
    return fail(ncclInvalidUsage,
                "NCCL_ALGO=%s leaves no algorithm for %s of device buffers on %d ranks: over the "
                "P2P transport Braid runs Ring and Tree (and Self on one rank)",
                comm.config.algo.c_str(), collName(args.coll), comm.nranks);
  if (!chosen)
    return fail(ncclInvalidUsage, "NCCL_ALGO=%s leaves no algorithm for %s on %d ranks",
                comm.config.algo.c_str(), collName(args.coll), comm.nranks);
  comm.lastAlgorithm.store(chosen->name(), std::memory_order_relaxed);
  BRAID_INFO(kSubsysColl,
             "%s: opCount %llu sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p "
             "[nranks=%d] algorithm %s",
             collName(args.coll), static_cast<unsigned long long>(comm.opCount), args.sendbuff,
             args.recvbuff, args.count, args.op.dtype, static_cast<int>(args.op.op), args.root,
             static_cast<void*>(&comm), comm.nranks, chosen->name());
  args.fingerprint = collectiveFingerprint(comm.opCount, args, chosen->name());
  const int64_t entry =
      comm.recorder.begin(comm.opCount, collName(args.coll), bytes, chosen->name());
  ncclResult_t r;
  {
    MismatchWatch watch(comm, args);
    const bool timed = adaptive && adaptive->timing >= 0;
    const auto start =
        timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    r = chosen->run(args, comm);
    if (timed && r == ncclSuccess)
      AdaptiveChoice::record(adaptive, std::chrono::duration<double, std::micro>(
                                           std::chrono::steady_clock::now() - start)
                                           .count());
  }
  for (int i = 0; i < 3; i++) comm.lastCollective[i] = args.fingerprint.words[i];
  comm.recorder.setState(entry, r == ncclSuccess ? OpState::kDone : OpState::kFailed);
  if (r != ncclSuccess) {
    addContext(r, "rank %d: %s #%llu (%s)", comm.rank, collName(args.coll),
               static_cast<unsigned long long>(comm.opCount), chosen->name());
    commSetError(&comm, r, lastError());
    comm.recorder.dumpOnFirstFailure(lastError());
  }
  return r;
}

}  // namespace braid
