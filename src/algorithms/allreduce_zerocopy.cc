// Zero-copy allreduce for large messages between ranks on one host whose buffers are registered
// (ncclCommRegister or ncclCommWindowRegister of ncclMemAlloc memory; any registered memory when
// the ranks are threads of one process). Nothing goes through the FIFOs but three small slots per
// peer: every rank reads its peers' buffers where they are.
//   0. Each rank sends every peer a descriptor of its send and receive buffers. Registration is
//      local, so only now does each rank learn whether all did; all reach the same answer from
//      the same n descriptors, and if any rank did not, all run the FIFO algorithm instead.
//   1. Rank j reduces block j of all n send buffers, in rank order 0..n-1 (as Direct and TwoShot
//      do), straight into block j of its own receive buffer; then tells every peer it is done.
//   2. Each rank copies block k of rank k's receive buffer into its own, for every k; then tells
//      every peer it has finished reading, so no rank returns while a peer still reads from it.
// Per rank this reads 2 - 1/n and writes 1 message's worth, against the FIFO algorithms' extra
// copy into and out of every slot. In place is safe: in phase 1 rank j writes only block j, which
// no peer reads then; in phase 2 it overwrites the peers' blocks, which they finished reading.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/primitives.h"
#include "algorithms/registry.h"
#include "core/comm.h"
#include "util/status.h"

namespace braid {
namespace {

// Each phase-1 step combines n terms of this many bytes through an accumulator that stays in
// the L2 cache (1 MiB per core here), so only the final value goes out to memory.
constexpr size_t kChunkBytes = 128 * 1024;

struct BufferPair {
  BufferDescriptor send, recv;
  unsigned char preMulScalar[8];  ///< PreMulSum scales each rank's term by that rank's scalar
};

bool onOneHost(const ncclComm& comm) {
  for (int p = 0; p < comm.nranks; p++) {
    if (p == comm.rank) continue;
    const char* t = comm.sendTo[p]->transportName();
    if (strcmp(t, "shm") != 0 && strcmp(t, "local") != 0) return false;
  }
  return true;
}

// A slot with no data: "this phase is done" (carries the fingerprint like every slot).
ncclResult_t signalAll(ncclComm& comm, const CollArgs& args, const void* data, uint32_t bytes) {
  for (int i = 1; i < comm.nranks; i++) {
    FifoSender& f = comm.sendTo[(comm.rank + i) % comm.nranks]->fifo();
    void* slot;
    BRAID_TRY(f.acquire(comm.policy, &slot));
    if (bytes) memcpy(slot, data, bytes);
    f.post(slotInfo(bytes, args.fingerprint));
  }
  return ncclSuccess;
}

// Receives one slot of `bytes` from every peer; `into` (if set) gets rank k's copy at [k].
ncclResult_t awaitAll(ncclComm& comm, const CollArgs& args, size_t bytes, BufferPair* into) {
  for (int i = 1; i < comm.nranks; i++) {
    const int from = (comm.rank + comm.nranks - i) % comm.nranks;
    const void* data;
    BRAID_TRY(waitForSlot(comm, args, from, bytes, &data));
    if (into) memcpy(&into[from], data, bytes);
    comm.recvFrom[from]->fifo().release();
  }
  return ncclSuccess;
}

class ZeroCopyAllReduce : public Algorithm {
 public:
  const char* name() const override { return "ZeroCopy"; }

  bool supports(const CollArgs& args, const ncclComm& comm) const override {
    return args.coll == CollType::kAllReduce && comm.nranks > 1 &&
           args.count * args.elemSize >= comm.config.zeroCopyMinBytes && allPairsConnected(comm) &&
           onOneHost(comm);
  }

  ncclResult_t run(const CollArgs& args, ncclComm& comm) const override {
    const int n = comm.nranks, me = comm.rank;
    const size_t bytes = args.count * args.elemSize;
    std::vector<BufferPair> all(n);
    all[me].send = comm.registrations.describe(args.sendbuff, bytes);
    all[me].recv = comm.registrations.describe(args.recvbuff, bytes);
    memcpy(all[me].preMulScalar, args.op.scalar, sizeof(all[me].preMulScalar));
    BRAID_TRY(signalAll(comm, args, &all[me], sizeof(BufferPair)));
    BRAID_TRY(awaitAll(comm, args, sizeof(BufferPair), all.data()));
    bool oneProcess = true, registered = true, mappable = true;
    for (int k = 0; k < n; k++) {
      oneProcess = oneProcess && comm.peers[k].processHash == comm.peers[me].processHash;
      registered = registered && all[k].send.registered && all[k].recv.registered;
      mappable = mappable && all[k].send.fd >= 0 && all[k].recv.fd >= 0;
    }
    if (!registered || !(oneProcess || mappable)) return fallback(args, comm);

    std::vector<const char*> send(n), recv(n);
    for (int k = 0; k < n; k++) {
      if (k == me) {
        send[k] = static_cast<const char*>(args.sendbuff);
        recv[k] = static_cast<const char*>(args.recvbuff);
        continue;
      }
      BRAID_TRY(comm.registrations.resolve(k, all[k].send, bytes, oneProcess, &send[k]));
      BRAID_TRY(comm.registrations.resolve(k, all[k].recv, bytes, oneProcess, &recv[k]));
    }
    comm.zeroCopyRuns++;
    reduceOwnBlock(args, comm, send, all);
    BRAID_TRY(signalAll(comm, args, nullptr, 0));
    BRAID_TRY(awaitAll(comm, args, 0, nullptr));
    const size_t es = args.elemSize;
    for (int i = 1; i < n; i++) {
      const int k = (me + i) % n;
      const Block b = blockOf(args.count, n, k);
      kernels::copy(static_cast<char*>(args.recvbuff) + b.start * es, nullptr,
                    recv[k] + b.start * es, b.len * es);
    }
    BRAID_TRY(signalAll(comm, args, nullptr, 0));
    return awaitAll(comm, args, 0, nullptr);
  }

 private:
  // The FIFO algorithm the selector would have chosen; the fingerprint already says ZeroCopy on
  // every rank, so all ranks agree on it as they agree on the descriptors.
  static ncclResult_t fallback(const CollArgs& args, ncclComm& comm) {
    const Algorithm* other = chooseAlgorithm(comm, args, zeroCopyAllReduce());
    if (!other) other = ringAllReduce();  // NCCL_ALGO named only ZeroCopy
    return other->run(args, comm);
  }

  static void reduceOwnBlock(const CollArgs& args, const ncclComm& comm,
                             const std::vector<const char*>& send,
                             const std::vector<BufferPair>& all) {
    const int n = comm.nranks;
    const size_t es = args.elemSize;
    const Block mine = blockOf(args.count, n, comm.rank);
    char* out = static_cast<char*>(args.recvbuff);
    const size_t chunk = std::max<size_t>(64, kChunkBytes / es);
    thread_local std::vector<char> acc;
    if (acc.size() < chunk * es) acc.resize(chunk * es);
    const unsigned pre = kernels::kApplyPre, last = kernels::kApplyPre | kernels::kApplyPost;
    for (size_t off = mine.start; off < mine.start + mine.len; off += chunk) {
      const size_t len = std::min(chunk, mine.start + mine.len - off), at = off * es;
      char* dst = out + at;
      if (!args.op.preMul) {  // the first two terms combine in one pass
        kernels::reduce(args.op, n == 2 ? dst : acc.data(), nullptr, send[0] + at, send[1] + at,
                        len, n == 2 ? last : pre);
        for (int k = 2; k < n; k++)
          kernels::reduce(args.op, k == n - 1 ? dst : acc.data(), nullptr, acc.data(), send[k] + at,
                          len, k == n - 1 ? last : pre);
        continue;
      }
      kernels::ReduceOp termOp = args.op;  // with rank k's own scalar for term k
      for (int k = 0; k < n; k++) {
        memcpy(termOp.scalar, all[k].preMulScalar, sizeof(termOp.scalar));
        kernels::reduce(termOp, k == n - 1 ? dst : acc.data(), nullptr,
                        k == 0 ? nullptr : acc.data(), send[k] + at, len, k == n - 1 ? last : pre);
      }
    }
  }
};

}  // namespace

const Algorithm* zeroCopyAllReduce() {
  static ZeroCopyAllReduce a;
  return &a;
}

}  // namespace braid
