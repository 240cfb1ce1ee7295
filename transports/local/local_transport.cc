// Same-process transport: ranks that are threads of one process share the FIFO through a plain
// pointer in the connect blob (heap memory, no segment, no syscalls).
#include <cstdlib>
#include <cstring>

#include "transports/transport.h"
#include "util/status.h"

namespace braid {
namespace {

struct LocalBlob {
  uint64_t processHash;
  FifoControl* fifo;
};

class LocalRecv : public RecvConnection {
 public:
  explicit LocalRecv(void* mem) : mem_(mem) {
    fifo_.attach(static_cast<FifoControl*>(mem), nullptr);
  }
  ~LocalRecv() override { free(mem_); }
  const char* transportName() const override { return "local"; }

 private:
  void* mem_;
};

class LocalSend : public SendConnection {
 public:
  explicit LocalSend(FifoControl* c) { fifo_.attach(c, nullptr); }
  const char* transportName() const override { return "local"; }
};

class LocalTransport : public Transport {
 public:
  const char* name() const override { return "local"; }
  bool canConnect(const TransportContext& ctx, int peer) const override {
    return (*ctx.peers)[peer].processHash == (*ctx.peers)[ctx.rank].processHash;
  }
  ncclResult_t setupRecv(const TransportContext& ctx, int, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    size_t bytes = fifoBytes(ctx.nslots, ctx.slotBytes);
    void* mem = aligned_alloc(4096, bytes);
    if (!mem) return fail(ncclSystemError, "local transport: cannot allocate %zu bytes", bytes);
    FifoControl* fifo = fifoInit(mem, ctx.nslots, ctx.slotBytes);
    LocalBlob b{(*ctx.peers)[ctx.rank].processHash, fifo};
    memcpy(blob->bytes, &b, sizeof(b));
    *conn = std::make_unique<LocalRecv>(mem);
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
