// Shared-memory transport for processes on one host. The receiver creates a POSIX segment holding
// its FIFO (mode 0600, an unguessable name) and sends the name in the blob; the sender maps it.
// The receiver unlinks the name once every sender has mapped it (finish(), after a barrier), so
// nothing is left in /dev/shm after a run or a crash.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "transports/liveness.h"
#include "transports/transport.h"
#include "util/log.h"
#include "util/random.h"
#include "util/status.h"

namespace braid {
namespace {

struct ShmBlob {
  char name[64];
  uint64_t bytes;
};

class Mapping {
 public:
  Mapping(void* p, size_t n) : ptr_(p), bytes_(n) {}
  ~Mapping() {
    if (ptr_) munmap(ptr_, bytes_);
  }
  void* ptr() const { return ptr_; }

 private:
  void* ptr_;
  size_t bytes_;
};

ncclResult_t mapSegment(const char* name, size_t bytes, bool create, void** out) {
  int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600)
                  : shm_open(name, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return fail(ncclSystemError, "shm_open %s: %s", name, strerror(errno));
  if (create && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    shm_unlink(name);
    return fail(ncclSystemError, "ftruncate %s to %zu bytes: %s (is /dev/shm large enough?)", name,
                bytes, strerror(e));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    if (create) shm_unlink(name);
    return fail(ncclSystemError, "mmap %s: %s", name, strerror(errno));
  }
  *out = p;
  return ncclSuccess;
}

class ShmRecv : public RecvConnection {
 public:
  ShmRecv(const std::string& name, void* mem, size_t bytes, const PeerInfo& peer)
      : name_(name), map_(mem, bytes), live_(peer.pid, peer.pidStartTime, peer.rank) {
    fifo_.attach(static_cast<FifoControl*>(mem), &live_);
  }
  ~ShmRecv() override { unlinkName(); }
  const char* transportName() const override { return "shm"; }
  ncclResult_t finish(const TransportContext&) override {
    unlinkName();
    return ncclSuccess;
  }

 private:
  void unlinkName() {
    if (!name_.empty()) shm_unlink(name_.c_str());
    name_.clear();
  }
  std::string name_;
  Mapping map_;
  PidLiveness live_;
};

class ShmSend : public SendConnection {
 public:
  ShmSend(void* mem, size_t bytes, const PeerInfo& peer)
      : map_(mem, bytes), live_(peer.pid, peer.pidStartTime, peer.rank) {
    fifo_.attach(static_cast<FifoControl*>(mem), &live_);
  }
  const char* transportName() const override { return "shm"; }

 private:
  Mapping map_;
  PidLiveness live_;
};

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool canConnect(const TransportContext& ctx, int peer) const override {
    return (*ctx.peers)[peer].hostHash == (*ctx.peers)[ctx.rank].hostHash;
  }
  ncclResult_t setupRecv(const TransportContext& ctx, int peer, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    size_t bytes = fifoBytes(ctx.nslots, ctx.slotBytes);
    std::string name = "/braid-" + randomHex(12);
    void* mem = nullptr;
    BRAID_TRY(mapSegment(name.c_str(), bytes, true, &mem));
    fifoInit(mem, ctx.nslots, ctx.slotBytes);
    ShmBlob b{};
    snprintf(b.name, sizeof(b.name), "%s", name.c_str());
    b.bytes = bytes;
    memcpy(blob->bytes, &b, sizeof(b));
    *conn = std::make_unique<ShmRecv>(name, mem, bytes, (*ctx.peers)[peer]);
    BRAID_INFO(kSubsysShm, "shm: rank %d <- %d through %s (%zu bytes)", ctx.rank, peer, b.name,
               bytes);
    return ncclSuccess;
  }
  ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                           std::unique_ptr<SendConnection>* conn) override {
    ShmBlob b;
    memcpy(&b, blob.bytes, sizeof(b));
    b.name[sizeof(b.name) - 1] = 0;
    if (strncmp(b.name, "/braid-", 7) != 0 || b.bytes != fifoBytes(ctx.nslots, ctx.slotBytes))
      return fail(ncclInternalError, "shm: malformed connect blob from rank %d", peer);
    void* mem = nullptr;
    if (ncclResult_t r = mapSegment(b.name, b.bytes, false, &mem); r != ncclSuccess)
      return addContext(r, "connecting to rank %d", peer);
    *conn = std::make_unique<ShmSend>(mem, b.bytes, (*ctx.peers)[peer]);
    return ncclSuccess;
  }
};

}  // namespace

Transport* shmTransport() {
  static ShmTransport t;
  return &t;
}

}  // namespace braid
