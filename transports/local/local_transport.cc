// Same-process transport: ranks that are threads of one process share the FIFO through a plain
// pointer in the connect blob (heap memory, no segment, no syscalls).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "transports/transport.h"
#include "util/futex.h"
#include "util/status.h"

namespace braid {
namespace {

// The FIFO memory is shared by the two ends, which belong to different communicators that may
// be destroyed (or aborted) in any order: the last end to go frees it, and the first one to go
// marks the FIFO closed so the other end's waits end at once instead of at their deadline.
struct LocalFifo {
  std::atomic<int> ends{1};
  void* mem = nullptr;
  FifoControl* control() const { return static_cast<FifoControl*>(mem); }
};

void releaseEnd(LocalFifo* shared) {
  FifoControl* c = shared->control();
  c->closed.store(1);
  futexWakeAll(&c->head);
  futexWakeAll(&c->tail);
  if (shared->ends.fetch_sub(1) == 1) {
    free(shared->mem);
    delete shared;
  }
}

struct LocalBlob {
  uint64_t processHash;
  LocalFifo* fifo;
};
// The P2P transport carries this blob inside its own.
static_assert(sizeof(LocalBlob) <= kCarriedBlobBytes);

// name, link class, shares memory, same process, uses interfaces, carries device slots
constexpr TransportTraits kLocalTraits = {"local", LinkClass::kLocal, true, true, false, false};

class LocalRecv : public RecvConnection {
 public:
  explicit LocalRecv(LocalFifo* shared) : shared_(shared) {
    fifo_.attach(shared->control(), nullptr);
  }
  ~LocalRecv() override { releaseEnd(shared_); }
  const TransportTraits& transport() const override { return kLocalTraits; }

 private:
  LocalFifo* shared_;
};

class LocalSend : public SendConnection {
 public:
  explicit LocalSend(LocalFifo* shared) : shared_(shared) {
    shared_->ends.fetch_add(1);
    fifo_.attach(shared->control(), nullptr);
  }
  ~LocalSend() override { releaseEnd(shared_); }
  const TransportTraits& transport() const override { return kLocalTraits; }

 private:
  LocalFifo* shared_;
};

class LocalTransport : public Transport {
 public:
  const TransportTraits& traits() const override { return kLocalTraits; }
  bool canConnect(const TransportContext& ctx, int peer) const override {
    return (*ctx.peers)[peer].processHash == (*ctx.peers)[ctx.rank].processHash;
  }
  ncclResult_t setupRecv(const TransportContext& ctx, int, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    size_t bytes = fifoBytes(ctx.nslots, ctx.slotBytes);
    void* mem = aligned_alloc(4096, bytes);
    if (!mem) return fail(ncclSystemError, "local transport: cannot allocate %zu bytes", bytes);
    fifoInit(mem, ctx.nslots, ctx.slotBytes);
    auto* shared = new LocalFifo;
    shared->mem = mem;
    LocalBlob b{(*ctx.peers)[ctx.rank].processHash, shared};
    memcpy(blob->bytes, &b, sizeof(b));
    *conn = std::make_unique<LocalRecv>(shared);
    return ncclSuccess;
  }
  ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                           std::unique_ptr<SendConnection>* conn) override {
    LocalBlob b;
    memcpy(&b, blob.bytes, sizeof(b));
    if (b.processHash != (*ctx.peers)[ctx.rank].processHash)
      return fail(ncclInternalError, "local transport: blob from rank %d is from another process",
                  peer);
    *conn = std::make_unique<LocalSend>(b.fifo);
    return ncclSuccess;
  }
};

}  // namespace

Transport* localTransport() {
  static LocalTransport t;
  return &t;
}

}  // namespace braid
