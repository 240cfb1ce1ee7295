// TCP transport for ranks on different hosts (or when NCCL_SHM_DISABLE=1). The algorithms still
// see an in-memory FIFO. Receives are pulled off the sockets by the rank while it waits for them
// (tcp_receive_pump.h); sends of small slots leave from the rank's own thread, and the rest from
// a thread per connection (tcp_send_engine.h), so sends never block the algorithm while its own
// peer is busy sending (no ring deadlock). Each connection stripes its slots over several
// sockets (BRAID_TCP_SOCKETS) with large socket buffers, and its sockets over the interfaces
// NCCL_SOCKET_IFNAME names (at least one socket each), so that several links carry it.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "transports/tcp/tcp_receive_pump.h"
#include "transports/tcp/tcp_send_engine.h"
#include "transports/transport.h"
#include "util/hmac_sha256.h"
#include "util/log.h"
#include "util/random.h"
#include "util/status.h"

namespace braid {
namespace {

constexpr uint32_t kHelloMagic = 0x42524443;  // "BRDC"
constexpr int kMaxSockets = 8;

// An address as the blob carries it: a sockaddr_in or sockaddr_in6 without sockaddr_storage's
// padding, so that one per interface fits the connect blob.
struct WireAddr {
  unsigned char bytes[sizeof(sockaddr_in6)];
  uint32_t len;
};

struct TcpBlob {
  WireAddr addrs[kMaxTcpInterfaces];  // where the receiver listens, one per interface
  int32_t naddrs;
  int32_t nsockets;  // socket i goes to addrs[i % naddrs]
  uint64_t connId;   // which of the receiver's connections this is (random)
};

struct Hello {
  uint32_t magic;
  int32_t fromRank;
  uint64_t connId;
  int32_t socketIndex;
  int32_t pad;
  unsigned char proof[kSha256Bytes];  ///< helloProof(): the secret itself never travels
};

// HMAC under the communicator's secret of what the hello claims. connId is random per
// connection and known only to the communicator's ranks (it travels in the connect blobs, through
// the authenticated bootstrap), so a proof is good for one connection's sockets only.
void helloProof(const unsigned char secret[16], const Hello& h, unsigned char out[kSha256Bytes]) {
  static const char kRole[] = "braid-tcp-connection";
  const MacPart parts[] = {{kRole, sizeof(kRole)},
                           {&h.fromRank, sizeof(h.fromRank)},
                           {&h.connId, sizeof(h.connId)},
                           {&h.socketIndex, sizeof(h.socketIndex)}};
  hmacSha256(secret, 16, parts, 4, out);
}

// name, link class, shares memory, same process, uses interfaces, carries device slots
constexpr TransportTraits kTcpTraits = {"tcp", LinkClass::kTcp, false, false, true, false};

class TcpRecv : public RecvConnection {
 public:
  TcpRecv(std::vector<int> listenFds, const TcpBlob& blob, int peer)
      : listenFds_(std::move(listenFds)), blob_(blob), peer_(peer) {}
  ~TcpRecv() override {
    pump_.reset();
    for (int& fd : listenFds_) closeFd(fd);
  }
  const TransportTraits& transport() const override { return kTcpTraits; }

  ncclResult_t finish(const TransportContext& ctx) override {
    std::vector<int> fds(blob_.nsockets, -1);
    int accepted = 0;
    Deadline deadline = Deadline::after(ctx.policy.timeoutS);
    while (accepted < blob_.nsockets) {
      int fd = -1;
      if (ncclResult_t r = acceptFromAny(listenFds_, deadline, ctx.policy.abort, &fd);
          r != ncclSuccess) {
        for (int& f : fds) closeFd(f);
        return addContext(r, "TCP connection from rank %d", peer_);
      }
      // Strangers are dropped: a hello must arrive promptly and prove the secret.
      Hello h{};
      Deadline helloDeadline = Deadline::after(5);
      bool ok = recvAll(fd, &h, sizeof(h), helloDeadline, ctx.policy.abort) == ncclSuccess &&
                h.magic == kHelloMagic && h.fromRank == peer_ && h.connId == blob_.connId &&
                h.socketIndex >= 0 && h.socketIndex < blob_.nsockets && fds[h.socketIndex] < 0;
      if (ok) {
        unsigned char expected[kSha256Bytes];
        helloProof(ctx.secret, h, expected);
        ok = constantTimeEqual(h.proof, expected, sizeof(expected));
      }
      if (!ok) {
        BRAID_WARN("tcp: dropped a connection that did not prove this communicator's secret");
        closeFd(fd);
        continue;
      }
      tuneSocket(fd, ctx.tcpBufferBytes);
      fds[h.socketIndex] = fd;
      accepted++;
    }
    for (int& l : listenFds_) closeFd(l);
    const bool sameHost =
        ctx.peers && (*ctx.peers)[peer_].hostHash == (*ctx.peers)[ctx.rank].hostHash;
    pump_ = std::make_unique<TcpReceivePump>(std::move(fds), ctx.nslots, ctx.slotBytes, peer_,
                                             sameHost);
    // The rank itself pulls the frames: it can receive straight into its own buffers.
    fifo_.attach(pump_->fifo(), pump_.get(), /*acceptsClaims=*/true, pump_.get());
    return ncclSuccess;
  }

 private:
  std::vector<int> listenFds_;
  TcpBlob blob_;
  int peer_;
  std::unique_ptr<TcpReceivePump> pump_;
};

class TcpSend : public SendConnection {
 public:
  TcpSend(std::unique_ptr<TcpSendEngine> engine, const std::atomic<uint32_t>* abort,
          double timeoutS)
      : engine_(std::move(engine)), abort_(abort), timeoutS_(timeoutS) {
    // The engine is this process: it can send straight out of the rank's buffers.
    fifo_.attach(engine_->fifo(), engine_.get(), /*acceptsLent=*/true, engine_.get());
  }
  // A rank that finished its last operation may destroy its communicator while its final slots
  // are still queued: they must reach the peer first (an abort waits a short grace period).
  ~TcpSend() override { engine_->drain(timeoutS_, abort_); }
  const TransportTraits& transport() const override { return kTcpTraits; }

 private:
  std::unique_ptr<TcpSendEngine> engine_;
  const std::atomic<uint32_t>* abort_;
  double timeoutS_;
};

class TcpTransport : public Transport {
 public:
  const TransportTraits& traits() const override { return kTcpTraits; }
  bool canConnect(const TransportContext&, int) const override { return true; }

  ncclResult_t setupRecv(const TransportContext& ctx, int peer, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    static_assert(sizeof(TcpBlob) <= kConnectBlobBytes);
    TcpBlob b{};
    std::vector<int> fds;
    std::string where;
    for (SockAddr addr : ctx.tcpAddresses) {
      if (b.naddrs == static_cast<int>(kMaxTcpInterfaces)) break;
      int fd = -1;
      if (ncclResult_t r = listenOn(&addr, &fd, 64); r != ncclSuccess) {
        for (int& f : fds) closeFd(f);
        return r;
      }
      fds.push_back(fd);
      WireAddr& w = b.addrs[b.naddrs++];
      w.len = std::min<uint32_t>(addr.len, sizeof(w.bytes));
      memcpy(w.bytes, &addr.storage, w.len);
      where += (where.empty() ? "" : ", ") + addr.toString();
    }
    if (b.naddrs == 0) return fail(ncclInternalError, "tcp: no interface address to listen on");
    // At least one socket per interface, so that every interface carries its share.
    const int wanted = std::max(ctx.tcpSockets, b.naddrs);
    b.nsockets = std::clamp(wanted, 1, kMaxSockets);
    secureRandom(&b.connId, sizeof(b.connId));
    memcpy(blob->bytes, &b, sizeof(b));
    *conn = std::make_unique<TcpRecv>(std::move(fds), b, peer);
    BRAID_INFO(kSubsysNet, "tcp: rank %d <- %d listening on %s, %d sockets", ctx.rank, peer,
               where.c_str(), b.nsockets);
    return ncclSuccess;
  }

  ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                           std::unique_ptr<SendConnection>* conn) override {
    TcpBlob b;
    memcpy(&b, blob.bytes, sizeof(b));
    bool wellFormed = b.nsockets >= 1 && b.nsockets <= kMaxSockets && b.naddrs >= 1 &&
                      b.naddrs <= static_cast<int>(kMaxTcpInterfaces);
    for (int i = 0; wellFormed && i < b.naddrs; i++)
      wellFormed = b.addrs[i].len > 0 && b.addrs[i].len <= sizeof(b.addrs[i].bytes);
    if (!wellFormed)
      return fail(ncclInternalError, "tcp: malformed connect blob from rank %d", peer);
    std::vector<int> fds;
    Deadline deadline = Deadline::after(ctx.policy.timeoutS);
    for (int i = 0; i < b.nsockets; i++) {
      // The sockets take the receiver's interfaces in turn.
      SockAddr addr;
      addr.len = b.addrs[i % b.naddrs].len;
      memcpy(&addr.storage, b.addrs[i % b.naddrs].bytes, addr.len);
      int fd = -1;
      // The receiver listened before publishing its blob: a refusal means it has exited.
      ncclResult_t r = connectTo(addr, deadline, ctx.policy.abort, &fd, /*refusedIsFinal=*/true);
      if (r == ncclSuccess) {
        tuneSocket(fd, ctx.tcpBufferBytes);
        Hello h{kHelloMagic, ctx.rank, b.connId, i, 0, {}};
        helloProof(ctx.secret, h, h.proof);
        r = sendAll(fd, &h, sizeof(h), deadline, ctx.policy.abort);
        fds.push_back(fd);
      }
      if (r != ncclSuccess) {
        for (int& f : fds) closeFd(f);
        return addContext(r, "TCP connection to rank %d at %s", peer, addr.toString().c_str());
      }
    }
    *conn = std::make_unique<TcpSend>(
        std::make_unique<TcpSendEngine>(std::move(fds), ctx.nslots, ctx.slotBytes,
                                        ctx.tcpInlineBytes, peer),
        ctx.policy.abort, ctx.policy.timeoutS);
    return ncclSuccess;
  }
};

}  // namespace

Transport* tcpTransport() {
  static TcpTransport t;
  return &t;
}

}  // namespace braid
