// The transport over a network plugin (net_loader.h chooses which, per communicator): between
// two ranks that chose the same network, ahead of Braid's own TCP. The receiver listens and its
// handle travels in the connect blob; the sender connects on its connection's thread while the
// receiver accepts in finish(), since a plugin's connect may need the other side's progress.
#include <cstring>

#include "transports/net/net_connection.h"
#include "transports/transport.h"
#include "util/log.h"
#include "util/status.h"

namespace braid {
namespace {

struct NetBlob {
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  int32_t dev;
};

// name, link class, shares memory, same process, uses interfaces, carries device slots
constexpr TransportTraits kNetTraits = {"net", LinkClass::kTcp, false, false, false, false};

class NetRecv : public RecvConnection {
 public:
  explicit NetRecv(std::unique_ptr<NetReceivePump> pump) : pump_(std::move(pump)) {}
  const TransportTraits& transport() const override { return kNetTraits; }
  ncclResult_t finish(const TransportContext& ctx) override {
    BRAID_TRY(pump_->accept(ctx.policy.timeoutS, ctx.policy.abort));
    // The rank itself pulls the messages while it waits (as over TCP).
    fifo_.attach(pump_->fifo(), pump_.get(), /*acceptsClaims=*/false, pump_.get());
    return ncclSuccess;
  }

 private:
  std::unique_ptr<NetReceivePump> pump_;
};

class NetSend : public SendConnection {
 public:
  NetSend(std::unique_ptr<NetSendEngine> engine, const std::atomic<uint32_t>* abort,
          double timeoutS)
      : engine_(std::move(engine)), abort_(abort), timeoutS_(timeoutS) {
    fifo_.attach(engine_->fifo(), engine_.get(), /*acceptsLent=*/false, engine_.get());
  }
  // As TCP's: a rank's final slots reach the peer before its communicator goes.
  ~NetSend() override { engine_->drain(timeoutS_, abort_); }
  const TransportTraits& transport() const override { return kNetTraits; }

 private:
  std::unique_ptr<NetSendEngine> engine_;
  const std::atomic<uint32_t>* abort_;
  double timeoutS_;
};

// Ranks of one host spread over the network's devices (NICs) by their order on the host.
ncclResult_t chooseDevice(const TransportContext& ctx, int* dev) {
  int ndev = 0;
  if (ncclResult_t r = ctx.net->devices(&ndev); r != ncclSuccess || ndev < 1)
    return fail(ncclSystemError, "NET/%s: devices() returned %s, %d devices", ctx.net->name(),
                ncclGetErrorString(r), ndev);
  const std::vector<PeerInfo>& peers = *ctx.peers;
  int local = 0;
  for (int r = 0; r < ctx.rank; r++) local += peers[r].hostHash == peers[ctx.rank].hostHash;
  *dev = local % ndev;
  NetDeviceProperties props;
  if (ncclResult_t r = ctx.net->properties(*dev, &props); r != ncclSuccess)
    return fail(r, "NET/%s: getProperties(%d) returned %s", ctx.net->name(), *dev,
                ncclGetErrorString(r));
  if (!(props.ptrSupport & NCCL_PTR_HOST))
    return fail(ncclSystemError,
                "NET/%s device %d (%s) does not take host memory (ptrSupport 0x%x): Braid's "
                "network path sends from host memory",
                ctx.net->name(), *dev, props.name.c_str(), props.ptrSupport);
  if (props.maxMessageBytes < ctx.slotBytes)
    return fail(ncclSystemError,
                "NET/%s device %d takes messages of at most %zu bytes, below "
                "BRAID_SLOT_BYTES=%zu",
                ctx.net->name(), *dev, props.maxMessageBytes, ctx.slotBytes);
  return ncclSuccess;
}

class NetTransport : public Transport {
 public:
  const TransportTraits& traits() const override { return kNetTraits; }
  bool canConnect(const TransportContext& ctx, int peer) const override {
    const std::vector<PeerInfo>& peers = *ctx.peers;
    // Both ranks chose the same plugin network (each reaches this answer from the same infos).
    return ctx.net && peers[ctx.rank].network[0] != 0 &&
           strncmp(peers[ctx.rank].network, peers[peer].network, sizeof(PeerInfo::network)) == 0;
  }

  ncclResult_t setupRecv(const TransportContext& ctx, int peer, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    static_assert(sizeof(NetBlob) <= kConnectBlobBytes);
    NetBlob b{};
    BRAID_TRY(chooseDevice(ctx, &b.dev));
    void* listenComm = nullptr;
    if (ncclResult_t r = ctx.net->listen(b.dev, b.handle, &listenComm); r != ncclSuccess)
      return fail(r, "NET/%s: listen on device %d (for rank %d) returned %s", ctx.net->name(),
                  b.dev, peer, ncclGetErrorString(r));
    memcpy(blob->bytes, &b, sizeof(b));
    *conn = std::make_unique<NetRecv>(
        std::make_unique<NetReceivePump>(ctx.net, listenComm, ctx.nslots, ctx.slotBytes, peer));
    BRAID_INFO(kSubsysNet, "NET/%s: rank %d <- %d on device %d (%s, v%d)", ctx.net->name(),
               ctx.rank, peer, b.dev, ctx.net->path().c_str(), ctx.net->version());
    return ncclSuccess;
  }

  ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                           std::unique_ptr<SendConnection>* conn) override {
    NetBlob b;
    memcpy(&b, blob.bytes, sizeof(b));
    int dev = 0;
    BRAID_TRY(chooseDevice(ctx, &dev));
    *conn = std::make_unique<NetSend>(
        std::make_unique<NetSendEngine>(ctx.net, dev, b.handle, ctx.nslots, ctx.slotBytes, peer,
                                        ctx.policy.timeoutS, ctx.policy.abort),
        ctx.policy.abort, ctx.policy.timeoutS);
    BRAID_INFO(kSubsysNet, "NET/%s: rank %d -> %d on device %d", ctx.net->name(), ctx.rank, peer,
               dev);
    return ncclSuccess;
  }
};

}  // namespace

Transport* netTransport() {
  static NetTransport t;
  return &t;
}

}  // namespace braid
