// Shared-memory transport for processes on one host. The receiver creates an anonymous memory
// file (memfd) holding its FIFO and sends its pid and descriptor number in the blob; the sender
// opens /proc/<pid>/fd/<n> and maps it. Nothing is ever named in /dev/shm, so a crash at any
// moment leaves nothing behind. Where /proc of the peer cannot be opened (other pid namespace,
// restricted ptrace access), a POSIX segment with a random name and mode 0600 is used instead,
// unlinked as soon as every sender has mapped it (finish(), after a barrier).
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
  char name[64];  ///< fallback: POSIX segment name
  uint64_t bytes;
  int32_t pid;  ///< memfd owner
  int32_t fd;   ///< memfd number in the owner (-1: use the name)
};
// The P2P transport carries this blob inside its own.
static_assert(sizeof(ShmBlob) <= kCarriedBlobBytes);

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

// name, link class, shares memory, same process, uses interfaces, carries device slots
constexpr TransportTraits kShmTraits = {"shm", LinkClass::kShm, true, false, false, false};

class ShmRecv : public RecvConnection {
 public:
  ShmRecv(const std::string& name, int fd, void* mem, size_t bytes, const PeerInfo& peer)
      : name_(name), fd_(fd), map_(mem, bytes), live_(peer.pid, peer.pidStartTime, peer.rank) {
    fifo_.attach(static_cast<FifoControl*>(mem), &live_);
  }
  ~ShmRecv() override { release(); }
  const TransportTraits& transport() const override { return kShmTraits; }
  // Every sender has mapped the memory: drop the name / descriptor that let them find it.
  ncclResult_t finish(const TransportContext&) override {
    release();
    return ncclSuccess;
  }

 private:
  void release() {
    if (!name_.empty()) shm_unlink(name_.c_str());
    name_.clear();
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  std::string name_;
  int fd_;
  Mapping map_;
  PidLiveness live_;
};

class ShmSend : public SendConnection {
 public:
  ShmSend(void* mem, size_t bytes, const PeerInfo& peer)
      : map_(mem, bytes), live_(peer.pid, peer.pidStartTime, peer.rank) {
    fifo_.attach(static_cast<FifoControl*>(mem), &live_);
  }
  const TransportTraits& transport() const override { return kShmTraits; }

 private:
  Mapping map_;
  PidLiveness live_;
};

class ShmTransport : public Transport {
 public:
  const TransportTraits& traits() const override { return kShmTraits; }
  bool canConnect(const TransportContext& ctx, int peer) const override {
    return (*ctx.peers)[peer].hostHash == (*ctx.peers)[ctx.rank].hostHash;
  }
  ncclResult_t setupRecv(const TransportContext& ctx, int peer, ConnectBlob* blob,
                         std::unique_ptr<RecvConnection>* conn) override {
    size_t bytes = fifoBytes(ctx.nslots, ctx.slotBytes);
    ShmBlob b{};
    b.bytes = bytes;
    b.pid = getpid();
    b.fd = -1;
    void* mem = nullptr;
    std::string name;
    int fd = memfd_create("braid-fifo", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) {
        mem = p;
        b.fd = fd;
      }
    }
    if (!mem) {
      if (fd >= 0) close(fd);
      fd = -1;
      name = "/braid-" + randomHex(12);
      BRAID_TRY(mapSegment(name.c_str(), bytes, true, &mem));
      snprintf(b.name, sizeof(b.name), "%s", name.c_str());
    }
    fifoInit(mem, ctx.nslots, ctx.slotBytes);
    memcpy(blob->bytes, &b, sizeof(b));
    *conn = std::make_unique<ShmRecv>(name, fd, mem, bytes, (*ctx.peers)[peer]);
    BRAID_INFO(kSubsysShm, "shm: rank %d <- %d through %s (%zu bytes)", ctx.rank, peer,
               fd >= 0 ? "a memfd" : b.name, bytes);
    return ncclSuccess;
  }
  ncclResult_t connectSend(const TransportContext& ctx, int peer, const ConnectBlob& blob,
                           std::unique_ptr<SendConnection>* conn) override {
    ShmBlob b;
    memcpy(&b, blob.bytes, sizeof(b));
    b.name[sizeof(b.name) - 1] = 0;
    if (b.bytes != fifoBytes(ctx.nslots, ctx.slotBytes) ||
        (b.fd < 0 && strncmp(b.name, "/braid-", 7) != 0))
      return fail(ncclInternalError, "shm: malformed connect blob from rank %d", peer);
    void* mem = nullptr;
    if (b.fd >= 0) {
      char path[64];
      snprintf(path, sizeof(path), "/proc/%d/fd/%d", b.pid, b.fd);
      int fd = open(path, O_RDWR | O_CLOEXEC);
      if (fd < 0)
        return fail(ncclSystemError, "shm: cannot open rank %d's memory through %s: %s", peer, path,
                    strerror(errno));
      void* p = mmap(nullptr, b.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      close(fd);
      if (p == MAP_FAILED)
        return fail(ncclSystemError, "shm: mmap of rank %d's memory: %s", peer, strerror(errno));
      mem = p;
    } else if (ncclResult_t r = mapSegment(b.name, b.bytes, false, &mem); r != ncclSuccess) {
      return addContext(r, "connecting to rank %d", peer);
    }
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
