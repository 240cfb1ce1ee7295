#include "tuner/tuner.h"

#include <algorithm>
#include <utility>

#include "algorithms/algorithm_registry.h"
#include "transports/mailbox.h"
#include "tuner/algo_filter.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

// Chosen whenever they support the call (and NCCL_ALGO allows them), before any ranking, in
// registry order: Self for one rank, then algorithms that beat every other one where they apply
// at all (ZeroCopy on registered buffers, LowLatency up to one mailbox entry:
// docs/performance.md). Their traits say so (Preference::kWhereverSupported).
bool alwaysPreferred(const Algorithm* a) {
  return a->traits().preference == Preference::kWhereverSupported;
}

}  // namespace

// The adaptive choice's view of one call: its size's near candidates and the agreement.
class Tuner::Adaptation final : public AdaptiveChoice::Host {
 public:
  Adaptation(Tuner& tuner, const Ranked& ranked, InternalRunner& runner)
      : tuner_(tuner), ranked_(ranked), runner_(runner) {}

  // The usable algorithms within kAdaptSpread of the cheapest estimate; none when an
  // always-preferred algorithm takes the call.
  int nearCandidates(const Algorithm** out, int max) override {
    if (ranked_.preferred) return 0;
    int n = 0;
    for (size_t i = 0; i < ranked_.usable.size() && n < max; i++) {
      if (n > 0 && ranked_.us[i] > kAdaptSpread * ranked_.us[0]) break;
      out[n++] = ranked_.usable[i];
    }
    return n;
  }

  ncclResult_t agree(double* totals, int n) override {
    return tuner_.runAgreement(runner_, totals, n, kernels::BaseOp::kSum);
  }

 private:
  Tuner& tuner_;
  const Ranked& ranked_;
  InternalRunner& runner_;
};

void Tuner::configure(const CommCostModel& model, const CommConfig& config, int nranks) {
  model_ = model;
  algo_ = config.algo;
  proto_ = config.proto;
  nranks_ = nranks;
  cache_.fill(Ranked{});
  adaptive_.configure(config.adaptCalls);
  memoryLinks_ = model.link != LinkClass::kTcp && nranks > 1;
  contended_ = false;
  calls_ = waitsSeen_ = unspunSeen_ = 0;
  freeSpinIters_ = -1;
}

ncclResult_t Tuner::runAgreement(InternalRunner& runner, double* values, int n,
                                 kernels::BaseOp op) {
  CollArgs args;
  args.coll = CollType::kAllReduce;
  args.sendbuff = values;
  args.recvbuff = values;
  args.count = static_cast<size_t>(n);
  args.elemSize = sizeof(double);
  args.op.dtype = ncclFloat64;
  args.op.op = op;
  args.userOp = static_cast<int>(op);  // (BaseOp keeps ncclRedOp_t's values)
  agreeing_ = true;
  ncclResult_t r = runner.runInternal(args);
  agreeing_ = false;
  return r;
}

CommCostModel Tuner::modelNow() const {
  CommCostModel m = model_;
  // Contended cores behave as more ranks than cores: every step waits for a peer to be run.
  if (contended_) m.oversubscribe = std::max(m.oversubscribe, 1.5);
  return m;
}

ncclResult_t Tuner::observe(const Context& ctx, InternalRunner& runner) {
  if (!memoryLinks_ || agreeing_ || ++calls_ % kContentionCalls != 0) return ncclSuccess;
  const WaitPolicy& p = ctx.team.policy;  // (counted by every wait of this communicator)
  const uint64_t waits = p.waits - waitsSeen_, unspun = p.unspun - unspunSeen_;
  waitsSeen_ = p.waits;
  unspunSeen_ = p.unspun;
  // The most contended rank speaks for all: one rank whose peer keeps losing its core slows
  // every step of every rank.
  double share = waits ? static_cast<double>(unspun) / static_cast<double>(waits) : 0.0;
  BRAID_TRY(runAgreement(runner, &share, 1, kernels::BaseOp::kMax));
  const bool was = contended_;
  contended_ = contended_ ? share > kFreeBelow : share > kContendedAbove;
  WaitPolicy& policy = ctx.team.policy;
  if (freeSpinIters_ < 0) freeSpinIters_ = policy.spinIters;
  policy.spinIters = contended_ ? std::min(freeSpinIters_, kContendedSpinPolls) : freeSpinIters_;
  policy.spinNow = std::min(policy.spinBudget(), policy.spinIters);
  if (contended_ != was)
    BRAID_INFO(kSubsysTune, "%.0f%% of the waits outlasted their spin: the cores are %s",
               100 * share, contended_ ? "contended" : "free again");
  return ncclSuccess;
}

Tuner::Ranked& Tuner::rank(const Context& ctx, const CollArgs& args) {
  const size_t bytes = args.bytes();
  Ranked& r = cache_[(bytes ^ (bytes >> 9) ^ (static_cast<size_t>(args.coll) * 7919) ^
                      (args.device ? 0x5bd1e995u : 0)) %
                     cache_.size()];
  if (r.valid && r.coll == args.coll && r.bytes == bytes && r.device == args.device &&
      r.contended == contended_)
    return r;
  r = Ranked{};
  r.coll = args.coll;
  r.bytes = bytes;
  r.device = args.device;
  r.contended = contended_;
  const CommCostModel model = modelNow();
  // Whether `a` may run the call: NCCL_ALGO and NCCL_PROTO allow it (Self needs no leave) and it
  // supports the call.
  auto usable = [&](const Algorithm* a) {
    if (args.device && !a->movesDeviceMemory()) return false;
    if (a == selfCollective()) return a->supports(args, ctx);
    return allowedBySpec(algoSpecFor(algo_, args.coll), a->name()) &&
           allowedBySpec(algoSpecFor(proto_, args.coll), protocolOf(a)) && a->supports(args, ctx);
  };
  CollArgs sized;  // the estimates read the collective and the size only
  sized.coll = args.coll;
  sized.count = args.count;
  sized.elemSize = args.elemSize;
  const auto& algos = algorithmsFor(args.coll);
  for (const Algorithm* a : algos)
    if (alwaysPreferred(a) && usable(a)) {
      r.usable.push_back(a);
      r.us.push_back(estimateCollectiveUs(model, nranks_, sized, *a));
    }
  r.preferred = !r.usable.empty();
  // The rest by the model's estimate (ties in registry order).
  std::vector<std::pair<double, const Algorithm*>> costs;
  for (const Algorithm* a : algos)
    if (!alwaysPreferred(a) && usable(a))
      costs.push_back({estimateCollectiveUs(model, nranks_, sized, *a), a});
  std::stable_sort(costs.begin(), costs.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [us, a] : costs) {
    r.usable.push_back(a);
    r.us.push_back(us);
  }
  r.valid = true;
  return r;
}

bool Tuner::adapts(const CollArgs& args) const {
  // Only where a call's time is the algorithm's: over TCP one call varies widely between
  // identical calls, and with more ranks than cores, or contended cores, it is mostly the
  // scheduler's; exploring there picks algorithms the model rightly ranks behind
  // (docs/performance.md, "Adaptive choice").
  return !agreeing_ && !contended_ && !args.device && args.coll == CollType::kAllReduce &&
         model_.link != LinkClass::kTcp && model_.oversubscribe <= 1 && nranks_ >= 2;
}

ncclResult_t Tuner::choose(const Context& ctx, const CollArgs& args, InternalRunner& runner,
                           Choice* out) {
  *out = Choice{};
  if (agreeing_) return chooseForAgreement(ctx, args, out);
  BRAID_TRY(observe(ctx, runner));
  Ranked& r = rank(ctx, args);
  if (r.usable.empty()) return noneLeft(args);
  out->algorithm = r.usable[0];
  out->fallback = r.usable.size() > 1 ? r.usable[1] : nullptr;
  if (adapts(args)) {
    Adaptation adaptation(*this, r, runner);
    const Algorithm* adapted = nullptr;
    AdaptiveChoice::Entry* entry = nullptr;
    BRAID_TRY(adaptive_.select(r.bytes, adaptation, &adapted, &entry));
    if (adapted) out->algorithm = adapted;
    if (entry && entry->timing >= 0) out->timed = entry;
  }
  last_.store(out->algorithm->name(), std::memory_order_relaxed);
  return ncclSuccess;
}

ncclResult_t Tuner::chooseForAgreement(const Context& ctx, const CollArgs& args, Choice* out) {
  // The tuner's own agreements reduce a few words on the stack: the quickest one-shot that
  // applies, whatever NCCL_ALGO says of the user's calls (ZeroCopy would only exchange
  // descriptors to find them unregistered, and start its quiet period for the user's calls).
  for (const Algorithm* a : {selfCollective(), lowLatencyAllReduce(), directAllReduce()}) {
    if (a->supports(args, ctx)) {
      out->algorithm = a;
      return ncclSuccess;
    }
  }
  out->algorithm = ringAllReduce();
  return ncclSuccess;
}

ncclResult_t Tuner::noneLeft(const CollArgs& args) const {
  // NCCL_PROTO takes NCCL_ALGO's syntax: Simple is every algorithm's protocol but LowLatency's,
  // which is LL (allreduce up to one mailbox entry, peers sharing memory); LL128 is a GPU
  // protocol. A spec can leave nothing that runs the call.
  if (!proto_.empty())
    return fail(ncclInvalidUsage,
                "NCCL_ALGO=%s and NCCL_PROTO=%s leave no algorithm for %s of %zu bytes on %d "
                "ranks: Braid's protocols are Simple (every algorithm) and LL (allreduce up to "
                "%zu bytes between ranks that share memory); LL128 is a GPU protocol",
                algo_.c_str(), proto_.c_str(), collName(args.coll), args.bytes(), nranks_,
                kMailboxBytes);
  if (args.device)
    return fail(ncclInvalidUsage,
                "NCCL_ALGO=%s leaves no algorithm for %s of device buffers on %d ranks: over the "
                "P2P transport Braid runs Ring and Tree (and Self on one rank)",
                algo_.c_str(), collName(args.coll), nranks_);
  return fail(ncclInvalidUsage, "NCCL_ALGO=%s leaves no algorithm for %s on %d ranks",
              algo_.c_str(), collName(args.coll), nranks_);
}

double Tuner::estimateUs(const Context& ctx, const CollArgs& args) {
  const Ranked& r = rank(ctx, args);
  return r.usable.empty() ? 0.0 : estimateCollectiveUs(modelNow(), nranks_, args, *r.usable[0]);
}

double Tuner::estimateP2pUs(size_t transfers, size_t bytes) const {
  return braid::estimateP2pUs(model_, transfers, bytes);
}

}  // namespace braid
