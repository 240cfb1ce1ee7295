// What every slot of an operation carries so the receiver can tell that both ranks are running
// the same call: the operation's fingerprint (sequence number, collective, count, datatype, op,
// algorithm, root or peer) packed into three words of the slot descriptor (SlotInfo::op). Checking
// it is three integer compares per slot; describing a mismatch decodes both sides into the calls
// the user made, e.g. "AllReduce(count=1024,float,sum) #57".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "algorithms/collectives.h"
#include "transports/fifo.h"

namespace braid {

struct CollArgs;

/// The kinds of operation a fingerprint names: a collective's is its CollType's value
/// (collectives.h), then point-to-point.
enum class OpKind : uint8_t {
  kSend = 16,  ///< point-to-point; the receiver expects a Send addressed to itself
};

struct Fingerprint {
  uint64_t words[3] = {};  ///< seq | count (bytes for Send) | kind, dtype, op, algorithm, root/peer
  bool operator==(const Fingerprint& o) const {
    return words[0] == o.words[0] && words[1] == o.words[1] && words[2] == o.words[2];
  }
  uint64_t seq() const { return words[0]; }
  OpKind kind() const { return static_cast<OpKind>(words[2] & 0xff); }
  /// A 32-bit summary for SlotInfo::tag (kept for framing checks; the words decide).
  uint32_t tag() const {
    uint64_t h = words[0] * 0x9e3779b97f4a7c15ull ^ words[1] * 0xc2b2ae3d27d4eb4full ^ words[2];
    return static_cast<uint32_t>(h ^ (h >> 32)) | 1u;
  }
};

/// The fingerprint of collective `args`, run by `algorithm`, as call number `seq` of its
/// communicator.
Fingerprint collectiveFingerprint(uint64_t seq, const CollArgs& args, const char* algorithm);
/// The fingerprint of the `seq`-th point-to-point transfer of `bytes` bytes to rank `to`;
/// `device`: moved through the P2P transport's device slots.
Fingerprint sendFingerprint(uint64_t seq, size_t bytes, int to, bool device = false);

/// Fills a slot descriptor: payload length plus the operation's fingerprint.
inline SlotInfo slotInfo(uint32_t bytes, const Fingerprint& f) {
  return SlotInfo{bytes, f.tag(), {f.words[0], f.words[1], f.words[2]}};
}
/// The fingerprint a received slot carries.
inline Fingerprint fingerprintOf(const SlotInfo& info) {
  Fingerprint f;
  for (int i = 0; i < 3; i++) f.words[i] = info.op[i];
  return f;
}

/// The call as its user wrote it, with its sequence number: "Reduce(count=7,int32,max,root=2) #4".
/// `asReceiver` names a Send fingerprint as the matching Recv(bytes=..,peer=<sender>);
/// `withAlgorithm` appends " with Ring" etc.
std::string describeCall(const Fingerprint& f, bool asReceiver = false, int sender = -1,
                         bool withAlgorithm = false);

/// "rank R called <mine> but rank P called <theirs>", with a hint when the fingerprints agree and
/// only the slot sizes differ (NCCL_ALGO or BRAID_SLOT_BYTES set differently on the two ranks).
std::string describeMismatch(int rank, const Fingerprint& mine, size_t myBytes, int peer,
                             const SlotInfo& theirs);

}  // namespace braid
