// Low-latency allreduce for the smallest messages on one host: the one-shot exchange of Direct,
// but through each FIFO's mailbox (transports/mailbox.h) instead of its slots. A rank writes
// pre(x) into every peer's mailbox in one burst, the round number in the same cache line as
// the first bytes, and reduces the peers' contributions where they lie. An 8-byte allreduce then
// costs one cache-line transfer per peer each way, against a slot, a head counter and a tail
// counter per peer for Direct.
//
// Terms are combined in rank order 0..n-1, the same expression Direct evaluates, so every rank
// gets bitwise-identical output and LowLatency and Direct agree bit for bit.
#include <vector>

#include "algorithms/algorithm_registry.h"
#include "algorithms/primitives.h"
#include "util/status.h"

namespace braid {
namespace {

// Always preferred where it applies (up to one mailbox entry, every peer sharing memory): it
// beats every other algorithm there (docs/performance.md); its estimate answers
// ncclGroupSimulateEnd.
const AlgorithmTraits kTraits{
    .name = "LowLatency",
    .protocol = WireProtocol::kLL,
    .preference = Preference::kWhereverSupported,
    .cost = {
        .shared = {0.25, 0.25, 0, 1.0, 1.0, 0, 0, true, kToEveryPeer, kToEveryPeer},
        .dedicated = CostShape{0.25, 0.25, 0, 1.0, 1.0, 0, 0, true, kToEveryPeer, kToEveryPeer}}};

class LowLatencyAllReduce : public Algorithm {
 public:
  const AlgorithmTraits& traits() const override { return kTraits; }

  bool supports(const CollArgs& args, const Context& ctx) const override {
    return args.coll == CollType::kAllReduce && ctx.nranks() > 1 &&
           args.count * args.elemSize <= kMailboxBytes && ctx.team.peersShareMemory;
  }

  ncclResult_t run(const CollArgs& args, Context& ctx) const override {
    const int n = ctx.nranks(), me = ctx.rank();
    const size_t count = args.count;
    const auto bytes = static_cast<uint32_t>(count * args.elemSize);
    // pre(x) once, into a per-thread buffer that is also this rank's own term (the input may
    // alias the output), then one burst per peer's mailbox.
    thread_local std::vector<unsigned char> own;
    if (own.size() < kMailboxBytes) own.resize(kMailboxBytes);
    kernels::reduce(args.op, own.data(), nullptr, nullptr, args.sendbuff, count,
                    kernels::kApplyPre);
    for (int i = 1; i < n; i++)
      ctx.sendFifo((me + i) % n).mailbox().post(own.data(), bytes, args.fingerprint.words);

    const void* acc = nullptr;
    for (int k = 0; k < n; k++) {
      const void* term = own.data();
      if (k != me) {
        const MailboxEntry* e;
        BRAID_TRY(ctx.recvFifo(k).waitMailbox(ctx.policy(), &e));
        BRAID_TRY(checkEntry(ctx, args, k, bytes, *e));
        term = e->data;
      }
      if (!acc) {
        acc = term;
        continue;
      }
      unsigned flags = k == n - 1 ? kernels::kApplyPost : 0u;
      kernels::reduce(args.op, args.recvbuff, nullptr, acc, term, count, flags);
      acc = args.recvbuff;
    }
    for (int k = 0; k < n; k++)
      if (k != me) ctx.recvFifo(k).mailbox().done();
    return ncclSuccess;
  }

 private:
  static ncclResult_t checkEntry(const Context& ctx, const CollArgs& args, int from, uint32_t bytes,
                                 const MailboxEntry& e) {
    Fingerprint theirs;
    for (int i = 0; i < 3; i++) theirs.words[i] = e.op[i];
    if (theirs == args.fingerprint && e.bytes == bytes) return ncclSuccess;
    SlotInfo info{e.bytes, theirs.tag(), {e.op[0], e.op[1], e.op[2]}};
    return fail(ncclInvalidUsage, "%s",
                describeMismatch(ctx.rank(), args.fingerprint, bytes, from, info).c_str());
  }
};

}  // namespace

const Algorithm* lowLatencyAllReduce() {
  static LowLatencyAllReduce a;
  return &a;
}

}  // namespace braid
