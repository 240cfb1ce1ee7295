#include "algorithms/zero_copy.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "algorithms/primitives.h"
#include "algorithms/rank_order.h"
#include "core/shared_memory.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

struct Descriptors {
  BufferDescriptor send, recv;
  BufferDescriptor work;          ///< rank 0's SharedWork (others: unregistered)
  unsigned char preMulScalar[8];  ///< PreMulSum scales each rank's term by that rank's scalar
  uint32_t hasRecv;
  uint32_t reserved;
};

// One slot to every peer (`bytes` of `data`; 0: a bare signal with the fingerprint).
ncclResult_t signalAll(Context& ctx, const CollArgs& args, const void* data, uint32_t bytes) {
  for (int i = 1; i < ctx.nranks(); i++) {
    FifoSender& f = ctx.sendFifo((ctx.rank() + i) % ctx.nranks());
    void* slot;
    BRAID_TRY(f.acquire(ctx.policy(), &slot));
    if (bytes) memcpy(slot, data, bytes);
    f.post(slotInfo(bytes, args.fingerprint));
  }
  return ncclSuccess;
}

// One slot of `bytes` from every peer; `into` (if set) gets rank k's copy at [k].
ncclResult_t awaitAll(Context& ctx, const CollArgs& args, size_t bytes, Descriptors* into) {
  for (int i = 1; i < ctx.nranks(); i++) {
    const int from = (ctx.rank() + ctx.nranks() - i) % ctx.nranks();
    const void* data;
    BRAID_TRY(waitForSlot(ctx, args, from, bytes, &data));
    if (into) memcpy(&into[from], data, bytes);
    ctx.recvFifo(from).release();
  }
  return ncclSuccess;
}

// Rank 0's SharedWork allocations in this process, by address. Ranks in rank 0's process hold
// the allocation (a thread rank may still read `done` after rank 0 returned from the last call
// and destroyed its communicator) and use it at rank 0's address rather than a mapping of their
// own, so that tools which follow atomics by address (ThreadSanitizer) see the counters order
// the chunks' writes.
// Never destroyed: a communicator may be destroyed during exit, after static destructors ran.
struct SharedWorkTable {
  std::mutex mutex;
  std::map<uintptr_t, std::weak_ptr<void>> byAddress;
};
SharedWorkTable& sharedWorkTable() {
  static auto* table = new SharedWorkTable();
  return *table;
}

void freeSharedWork(void* p) {
  {
    SharedWorkTable& t = sharedWorkTable();
    std::lock_guard<std::mutex> lock(t.mutex);
    t.byAddress.erase(reinterpret_cast<uintptr_t>(p));
  }
  (void)sharedFree(p);
}

// Rank 0's SharedWork, allocated and registered with the communicator the first time; nullptr
// where shared memory is not to be had (the allreduce then runs without it).
const void* sharedWorkOf(Context& ctx) {
  if (!ctx.ops.sharedWork) {
    void* p = nullptr;
    if (sharedAlloc(sizeof(SharedWork), &p) != ncclSuccess) return nullptr;
    std::shared_ptr<void> owned(p, freeSharedWork);
    {
      SharedWorkTable& t = sharedWorkTable();
      std::lock_guard<std::mutex> lock(t.mutex);
      t.byAddress[reinterpret_cast<uintptr_t>(p)] = owned;
    }
    ctx.registrations.add(p, sizeof(SharedWork), false, 0);
    ctx.ops.sharedWork = std::move(owned);
  }
  return ctx.ops.sharedWork.get();
}

// Rank 0's SharedWork, for a rank of rank 0's own process (looked up once, then held).
ncclResult_t holdSharedWork(Context& ctx, uint64_t address, SharedWork** out) {
  if (ctx.ops.sharedWork && reinterpret_cast<uintptr_t>(ctx.ops.sharedWork.get()) == address) {
    *out = static_cast<SharedWork*>(ctx.ops.sharedWork.get());
    return ncclSuccess;
  }
  SharedWorkTable& t = sharedWorkTable();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.byAddress.find(address);
  std::shared_ptr<void> held = it == t.byAddress.end() ? nullptr : it->second.lock();
  if (!held)
    return fail(ncclInternalError, "rank 0's shared work words at 0x%llx are gone",
                static_cast<unsigned long long>(address));
  ctx.ops.sharedWork = held;
  *out = static_cast<SharedWork*>(held.get());
  return ncclSuccess;
}

}  // namespace

bool zeroCopyCandidate(const Context& ctx, size_t bytes) {
  return ctx.nranks() >= 2 && bytes >= ctx.config.zeroCopyMinBytes && ctx.team.peersShareMemory;
}

ncclResult_t zeroCopyExchange(Context& ctx, const CollArgs& args, size_t sendBytes,
                              size_t recvBytes, ZeroCopyView* view) {
  const int n = ctx.nranks(), me = ctx.rank();
  if (ctx.ops.zeroCopyQuiet > 0) {  // a recent round found a buffer unregistered: no round now
    view->usable = false;
    return ncclSuccess;
  }
  std::vector<Descriptors> all(n);
  all[me].send = ctx.registrations.describe(args.sendbuff, sendBytes);
  all[me].hasRecv = recvBytes > 0;
  if (recvBytes) all[me].recv = ctx.registrations.describe(args.recvbuff, recvBytes);
  memcpy(all[me].preMulScalar, args.op.scalar, sizeof(all[me].preMulScalar));
  if (me == 0 && args.coll == CollType::kAllReduce && ctx.config.zeroCopyShared)
    if (const void* work = sharedWorkOf(ctx))
      all[me].work = ctx.registrations.describe(work, sizeof(SharedWork));
  BRAID_TRY(signalAll(ctx, args, &all[me], sizeof(Descriptors)));
  BRAID_TRY(awaitAll(ctx, args, sizeof(Descriptors), all.data()));
  bool oneProcess = true, registered = true, mappable = true;
  for (int k = 0; k < n; k++) {
    const Descriptors& d = all[k];
    oneProcess = oneProcess && ctx.team.peers[k].processHash == ctx.team.peers[me].processHash;
    registered = registered && d.send.registered && (!d.hasRecv || d.recv.registered);
    mappable = mappable && d.send.fd >= 0 && (!d.hasRecv || d.recv.fd >= 0);
  }
  view->usable = registered && (oneProcess || mappable);
  ctx.ops.zeroCopyRounds++;
  if (!view->usable) {
    // Every rank saw the same descriptors, so every rank goes quiet at the same call.
    ctx.ops.zeroCopyQuiet = kZeroCopyQuietCalls;
    return ncclSuccess;
  }
  // Every rank decides from rank 0's descriptor alone, so all use SharedWork or none does. Ranks
  // of other processes map it through its memfd; those of rank 0's process hold it.
  const bool shareWork = all[0].work.registered && all[0].work.fd >= 0;
  view->send.assign(n, nullptr);
  view->recv.assign(n, nullptr);
  view->ops.assign(n, args.op);
  for (int k = 0; k < n; k++) {
    memcpy(view->ops[k].scalar, all[k].preMulScalar, sizeof(view->ops[k].scalar));
    if (k == me) {
      view->send[k] = static_cast<const char*>(args.sendbuff);
      view->recv[k] = static_cast<const char*>(args.recvbuff);
      continue;
    }
    BRAID_TRY(ctx.registrations.resolve(k, all[k].send, sendBytes, oneProcess, &view->send[k]));
    if (k == 0 && shareWork) {
      if (ctx.team.peers[0].processHash == ctx.team.peers[me].processHash) {
        BRAID_TRY(holdSharedWork(ctx, all[0].work.address, &view->work));
      } else {
        const char* work;
        BRAID_TRY(ctx.registrations.resolve(0, all[0].work, sizeof(SharedWork), false, &work));
        view->work = reinterpret_cast<SharedWork*>(const_cast<char*>(work));
      }
    }
    if (recvBytes)
      BRAID_TRY(ctx.registrations.resolve(k, all[k].recv, recvBytes, oneProcess, &view->recv[k]));
  }
  if (me == 0 && shareWork)
    view->work = static_cast<SharedWork*>(const_cast<void*>(sharedWorkOf(ctx)));
  ctx.ops.zeroCopyRuns++;
  return ncclSuccess;
}

void zeroCopyReduce(const ZeroCopyView& v, const CollArgs& args, size_t first, size_t count,
                    char* dst) {
  const int n = static_cast<int>(v.send.size());
  std::vector<const char*> terms(v.send.size());
  for (int k = 0; k < n; k++) terms[k] = v.send[k] + first * args.elemSize;
  reduceInRankOrder(v.ops.data(), terms.data(), n, count, args.elemSize, dst);
}

ncclResult_t zeroCopyBarrier(Context& ctx, const CollArgs& args) {
  BRAID_TRY(signalAll(ctx, args, nullptr, 0));
  return awaitAll(ctx, args, 0, nullptr);
}

ncclResult_t zeroCopyFallback(Context& ctx, const CollArgs& args, const Algorithm* ring) {
  const Algorithm* other = ctx.fallback ? ctx.fallback : ring;
  BRAID_INFO(kSubsysColl, "%s #%llu: buffers not registered on every rank, %s runs it",
             collName(args.coll), static_cast<unsigned long long>(args.fingerprint.seq()),
             other->name());
  return other->run(args, ctx);
}

}  // namespace braid
