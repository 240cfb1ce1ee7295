#include "algorithms/fingerprint.h"

#include <cstdio>
#include <cstring>

#include "algorithms/algorithm.h"
#include "algorithms/algorithm_registry.h"
#include "braid/datatypes.h"

namespace braid {
namespace {

// Third word: kind (bits 0-7), datatype (8-15), op (16-23), algorithm (24-30), device buffers
// (31), root or peer (32-63).
constexpr uint64_t kNoOp = 0xff;  // data is copied, not combined (broadcast, allgather, send)
// ncclAvg's value. The resolved op does not keep it apart: a floating avg is a premulsum by
// 1/nranks, an integer one a sum with postDiv. The caller's op (CollArgs::userOp) tells.
constexpr uint64_t kOpAvg = 4;
constexpr uint64_t kOpPreMulSum = 5;

constexpr uint64_t kAlgoMask = uint64_t(0x7f) << 24;
constexpr uint64_t kDeviceBit = uint64_t(1) << 31;  // moved over the P2P transport's device slots
uint64_t packWord2(OpKind kind, int dtype, uint64_t op, uint64_t algo, int rootOrPeer) {
  return static_cast<uint64_t>(kind) | (static_cast<uint64_t>(dtype & 0xff) << 8) | (op << 16) |
         (algo << 24) | (static_cast<uint64_t>(static_cast<uint32_t>(rootOrPeer)) << 32);
}

uint64_t algoId(const char* name) {
  // Algorithm names are string literals: the last one looked up is remembered by address.
  thread_local const char* lastName = nullptr;
  thread_local uint64_t lastId = 0;
  if (name && name == lastName) return lastId;
  lastName = name;
  return lastId = name ? algorithmId(name) : 0;
}

const char* kindName(OpKind k) {
  if (k == OpKind::kSend) return "Send";
  return static_cast<size_t>(k) < kNumCollectives ? collName(static_cast<CollType>(k)) : "unknown";
}

// As nccl-tests names them ("half", "float"): what users of the perf programs read.
const char* dtypeName(int dtype) {
  const DataType* t = findDataType(dtype);
  return t ? t->testsName : "unknown-type";
}

const char* opName(uint64_t op) {
  static const char* const kNames[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return op < 6 ? kNames[op] : "unknown-op";
}

bool isRooted(OpKind k) {
  return static_cast<size_t>(k) < kNumCollectives &&
         collectiveInfo(static_cast<CollType>(k)).rooted;
}

}  // namespace

Fingerprint collectiveFingerprint(uint64_t seq, const CollArgs& args, const char* algorithm) {
  uint64_t op = kNoOp;
  if (args.reduction) {
    if (args.userOp == ncclAvg || args.op.postDiv > 1)
      op = kOpAvg;
    else if (args.op.preMul)
      op = kOpPreMulSum;
    else
      op = static_cast<uint64_t>(args.op.op);
  }
  Fingerprint f;
  f.words[0] = seq;
  f.words[1] = args.count;
  f.words[2] =
      packWord2(static_cast<OpKind>(args.coll), args.op.dtype, op, algoId(algorithm), args.root) |
      (args.device ? kDeviceBit : 0);
  return f;
}

Fingerprint sendFingerprint(uint64_t seq, size_t bytes, int to, bool device) {
  Fingerprint f;
  f.words[0] = seq;
  f.words[1] = bytes;
  f.words[2] = packWord2(OpKind::kSend, 0, kNoOp, 0, to) | (device ? kDeviceBit : 0);
  return f;
}

std::string describeCall(const Fingerprint& f, bool asReceiver, int sender, bool withAlgorithm) {
  const OpKind kind = f.kind();
  const int dtype = static_cast<int>((f.words[2] >> 8) & 0xff);
  const uint64_t op = (f.words[2] >> 16) & 0xff;
  const int rootOrPeer = static_cast<int>(static_cast<uint32_t>(f.words[2] >> 32));
  const unsigned long long seq = f.words[0], count = f.words[1];
  char buf[160];
  if (kind == OpKind::kSend) {
    const char* where = (f.words[2] & kDeviceBit) ? " on device buffers" : "";
    if (asReceiver)
      snprintf(buf, sizeof(buf), "Recv(bytes=%llu,peer=%d) #%llu%s", count, sender, seq, where);
    else
      snprintf(buf, sizeof(buf), "Send(bytes=%llu,peer=%d) #%llu%s", count, rootOrPeer, seq, where);
    return buf;
  }
  int n = snprintf(buf, sizeof(buf), "%s(count=%llu,%s", kindName(kind), count, dtypeName(dtype));
  if (op != kNoOp && n > 0 && static_cast<size_t>(n) < sizeof(buf))
    n += snprintf(buf + n, sizeof(buf) - n, ",%s", opName(op));
  if (isRooted(kind) && n > 0 && static_cast<size_t>(n) < sizeof(buf))
    n += snprintf(buf + n, sizeof(buf) - n, ",root=%d", rootOrPeer);
  if (n > 0 && static_cast<size_t>(n) < sizeof(buf))
    n += snprintf(buf + n, sizeof(buf) - n, ") #%llu", seq);
  const uint64_t algo = (f.words[2] & kAlgoMask) >> 24;
  if (withAlgorithm && n > 0 && static_cast<size_t>(n) < sizeof(buf))
    n += snprintf(buf + n, sizeof(buf) - n, " with %s",
                  *algorithmNameOf(algo) ? algorithmNameOf(algo) : "?");
  if ((f.words[2] & kDeviceBit) && n > 0 && static_cast<size_t>(n) < sizeof(buf))
    snprintf(buf + n, sizeof(buf) - n, " on device buffers");
  return buf;
}

std::string describeMismatch(int rank, const Fingerprint& mine, size_t myBytes, int peer,
                             const SlotInfo& theirs) {
  Fingerprint other = fingerprintOf(theirs);
  // Calls that differ only in the algorithm: NCCL_ALGO is set differently on the two ranks.
  Fingerprint a = mine, b = other;
  a.words[2] &= ~kAlgoMask;
  b.words[2] &= ~kAlgoMask;
  const bool algoOnly = a == b && !(mine == other);
  // One rank passed device memory, the other host memory, on a communicator whose device
  // buffers move over the P2P transport (the algorithms may differ too: not every algorithm
  // moves device memory).
  const bool placeDiffers = (mine.words[2] & kDeviceBit) != (other.words[2] & kDeviceBit);
  std::string me = describeCall(mine, mine.kind() == OpKind::kSend, peer, algoOnly);
  std::string text = "operation mismatch: rank " + std::to_string(rank) + " called " + me +
                     " but rank " + std::to_string(peer) + " called " +
                     describeCall(other, false, -1, algoOnly);
  if (algoOnly)
    text +=
        " (the ranks chose different algorithms: NCCL_ALGO, NCCL_PROTO or BRAID_TUNER_ADAPT "
        "differs between them)";
  if (placeDiffers)
    text +=
        " (one rank's buffers are device memory, the other's host memory: on a "
        "communicator whose GPUs are connected by the P2P transport, every rank of a call "
        "passes the same kind)";
  if (other == mine)
    text += " in slots of a different size (rank " + std::to_string(rank) + " expects " +
            std::to_string(myBytes) + " bytes, rank " + std::to_string(peer) + " sent " +
            std::to_string(theirs.bytes) +
            "): NCCL_ALGO, BRAID_SLOT_BYTES or BRAID_NSLOTS differ between the ranks";
  return text;
}

}  // namespace braid
