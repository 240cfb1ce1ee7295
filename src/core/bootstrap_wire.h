// Messages between ranks and the bootstrap root, and between neighbours on the bootstrap ring.
// Input is untrusted: every length is bounded before anything is allocated, and anything
// unexpected closes the connection.
//
// The handshake proves the id's secret both ways without sending it:
//   rank -> root  AuthHello     a fresh rank nonce
//   root -> rank  AuthChallenge a fresh root nonce + HMAC(secret, "root", id nonce, both nonces)
//   rank          checks the root's proof: a process that merely listens on the id's address
//                 (a stale NCCL_COMM_ID port, a stranger) cannot answer, and learns nothing
//   rank -> root  RootHello     HMAC(secret, "rank", id nonce, both nonces) + who it is + the
//                               address of its ring port
//   root          checks the rank's proof before reading anything else
// Fresh nonces on both sides make a recorded handshake useless for a later one.
//
// Once every rank is in, the root sends each rank one RingAssignment (kFrameRing): its next's
// ring port and two fresh random tokens, one to present to next and one its previous will
// present. Tokens travel only over authenticated root connections, so the first thing on a ring
// connection (RingHello) proves the connector is the previous rank of this communicator. Then
// the ring carries length-prefixed entries (an all-gather passes each rank's on, n-1 hops).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "util/hmac_sha256.h"

namespace braid {

constexpr uint32_t kHelloMagic = 0x4c485242;      // "BRHL"
constexpr uint32_t kChallengeMagic = 0x43485242;  // "BRHC"
constexpr uint32_t kRingMagic = 0x47525242;       // "BRRG"
constexpr uint32_t kBootstrapVersion = 3;
constexpr size_t kNonceBytes = 16;
constexpr size_t kTokenBytes = 16;
constexpr size_t kRingAddrBytes = 28;  // room for a sockaddr_in6
constexpr uint32_t kMaxFrameBytes = 16u << 20;
constexpr int kMaxRanks = 1 << 16;

struct AuthHello {
  uint32_t magic;
  uint32_t version;
  unsigned char rankNonce[kNonceBytes];
};

struct AuthChallenge {
  uint32_t magic;
  uint32_t version;
  unsigned char rootNonce[kNonceBytes];
  unsigned char rootProof[kSha256Bytes];
};

struct RootHello {
  uint32_t magic;
  uint32_t version;
  unsigned char proof[kSha256Bytes];  ///< the rank's proof of the secret (see above)
  uint64_t nonce;
  int32_t nranks;
  int32_t rank;
  uint32_t ringAddrLen;  ///< 0 only for a communicator of one rank (no ring)
  uint32_t pad;
  unsigned char ringAddr[kRingAddrBytes];  ///< a sockaddr where the rank's ring port listens
  uint32_t pad2;
};

/// The root's answer, once every rank is in, to each rank: where its next on the ring listens,
/// what to present there, and what its previous must present.
struct RingAssignment {
  unsigned char nextAddr[kRingAddrBytes];
  uint32_t nextAddrLen;
  unsigned char tokenToNext[kTokenBytes];
  unsigned char tokenFromPrev[kTokenBytes];
};

/// The first bytes on a ring connection, from the previous rank to its next.
struct RingHello {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  uint32_t pad;
  unsigned char token[kTokenBytes];
};

// Ranks of one communicator may run different builds: the layouts are the wire format.
static_assert(sizeof(RootHello) == 96 && sizeof(RingAssignment) == 64 && sizeof(RingHello) == 32);

// kFrameRelay: a message for one rank, which the root forwards at once (not part of a round):
// from a rank, its body starts with the int32 rank it is for; from the root, with the int32 rank
// it came from. kFrameData from a rank enters a barrier; the root answers with an empty one.
enum FrameKind : uint32_t {
  kFrameData = 1,
  kFrameError = 2,
  kFrameBye = 3,
  kFrameRelay = 4,
  kFrameRing = 5,
};

struct FrameHeader {
  uint32_t kind;
  uint32_t bytes;
};

// The checks below are all the root and a rank do with bytes from the network; they are pure
// functions so the fuzz targets (tests/fuzz) can drive them directly.

/// The proof of the secret one side gives the other: HMAC-SHA-256 under the secret of the side's
/// role, the id's nonce and both handshake nonces (rank's first), so a proof answers exactly one
/// handshake and a root's proof is never a rank's.
inline void bootstrapProof(const unsigned char secret[16], uint64_t idNonce, bool byRoot,
                           const unsigned char rankNonce[kNonceBytes],
                           const unsigned char rootNonce[kNonceBytes],
                           unsigned char out[kSha256Bytes]) {
  static const char kRootRole[] = "braid-bootstrap-root";
  static const char kRankRole[] = "braid-bootstrap-rank";
  const MacPart parts[] = {{byRoot ? kRootRole : kRankRole, sizeof(kRootRole)},
                           {&idNonce, sizeof(idNonce)},
                           {rankNonce, kNonceBytes},
                           {rootNonce, kNonceBytes}};
  hmacSha256(secret, 16, parts, 4, out);
}

/// What the bytes a connection has sent to the root so far amount to.
enum class HelloVerdict { kNeedMore, kAdmit, kReject };

/// Checks the first message of a connection (magic and version); kAdmit fills *hello.
inline HelloVerdict examineAuthHello(const std::string& received, AuthHello* hello) {
  if (received.size() < sizeof(AuthHello)) return HelloVerdict::kNeedMore;
  AuthHello h;
  memcpy(&h, received.data(), sizeof(h));
  if (h.magic != kHelloMagic || h.version != kBootstrapVersion) return HelloVerdict::kReject;
  *hello = h;
  return HelloVerdict::kAdmit;
}

/// A ring port's address as a hello or an assignment carries it: an IPv4 or IPv6 sockaddr of
/// its exact size, with a port.
inline bool validRingAddress(const unsigned char* addr, uint32_t len) {
  sa_family_t family;
  if (len < sizeof(family) || len > kRingAddrBytes) return false;
  memcpy(&family, addr, sizeof(family));
  uint16_t port;
  if (family == AF_INET && len == sizeof(sockaddr_in)) {
    memcpy(&port, addr + offsetof(sockaddr_in, sin_port), sizeof(port));
  } else if (family == AF_INET6 && len == sizeof(sockaddr_in6)) {
    memcpy(&port, addr + offsetof(sockaddr_in6, sin6_port), sizeof(port));
  } else {
    return false;
  }
  return port != 0;
}

/// Checks a hello: magic, version, the rank's proof of the secret (constant-time comparison
/// with `expectedProof`, computed by the root for this handshake), the id's nonce, the counts
/// and the ring address. kAdmit fills *hello.
inline HelloVerdict examineHello(const std::string& received,
                                 const unsigned char expectedProof[kSha256Bytes], uint64_t nonce,
                                 RootHello* hello) {
  if (received.size() < sizeof(RootHello)) return HelloVerdict::kNeedMore;
  RootHello h;
  memcpy(&h, received.data(), sizeof(h));
  const bool proven = constantTimeEqual(h.proof, expectedProof, kSha256Bytes);
  const bool ringOk =
      h.nranks == 1 ? h.ringAddrLen == 0 : validRingAddress(h.ringAddr, h.ringAddrLen);
  bool ok = h.magic == kHelloMagic && h.version == kBootstrapVersion && proven &&
            h.nonce == nonce && h.nranks >= 1 && h.nranks <= kMaxRanks && h.rank >= 0 &&
            h.rank < h.nranks && ringOk;
  if (!ok) return HelloVerdict::kReject;
  *hello = h;
  return HelloVerdict::kAdmit;
}

/// What the front of a rank's byte stream to the root holds.
enum class FrameVerdict { kNeedMore, kFrame, kMalformed };

/// Takes one frame a rank sent (data, relay or bye, at most kMaxFrameBytes) off the front of
/// `buffer`. A relay must name its rank (at least 4 bytes).
inline FrameVerdict takeRankFrame(std::string* buffer, FrameHeader* header, std::string* body) {
  if (buffer->size() < sizeof(FrameHeader)) return FrameVerdict::kNeedMore;
  FrameHeader h;
  memcpy(&h, buffer->data(), sizeof(h));
  if (h.bytes > kMaxFrameBytes ||
      (h.kind != kFrameData && h.kind != kFrameBye && h.kind != kFrameRelay) ||
      (h.kind == kFrameRelay && h.bytes < sizeof(int32_t)))
    return FrameVerdict::kMalformed;
  if (buffer->size() < sizeof(h) + h.bytes) return FrameVerdict::kNeedMore;
  *header = h;
  body->assign(*buffer, sizeof(h), h.bytes);
  buffer->erase(0, sizeof(h) + h.bytes);
  return FrameVerdict::kFrame;
}

/// Checks the root's assignment (the body of a kFrameRing) for a rank of a `nranks`-rank
/// communicator: exactly one RingAssignment, with a valid address (none when the rank is alone).
inline bool examineRingAssignment(const std::string& body, int nranks, RingAssignment* out) {
  if (body.size() != sizeof(RingAssignment)) return false;
  RingAssignment a;
  memcpy(&a, body.data(), sizeof(a));
  if (nranks > 1 ? !validRingAddress(a.nextAddr, a.nextAddrLen) : a.nextAddrLen != 0) return false;
  *out = a;
  return true;
}

/// Checks what a connection to a ring port has sent so far: kAdmit only for the previous rank
/// (`prevRank`) presenting `expectedToken` (compared in constant time).
inline HelloVerdict examineRingHello(const std::string& received,
                                     const unsigned char expectedToken[kTokenBytes],
                                     int32_t prevRank) {
  if (received.size() < sizeof(RingHello)) return HelloVerdict::kNeedMore;
  RingHello h;
  memcpy(&h, received.data(), sizeof(h));
  const bool token = constantTimeEqual(h.token, expectedToken, kTokenBytes);
  if (!token || h.magic != kRingMagic || h.version != kBootstrapVersion || h.rank != prevRank)
    return HelloVerdict::kReject;
  return HelloVerdict::kAdmit;
}

/// Takes one entry ({uint32 length, bytes}, at most kMaxFrameBytes) of a ring all-gather from
/// `buffer` at *pos, advancing *pos past it.
inline FrameVerdict takeRingEntry(const std::string& buffer, size_t* pos, std::string* body) {
  uint32_t len;
  if (buffer.size() - *pos < sizeof(len)) return FrameVerdict::kNeedMore;
  memcpy(&len, buffer.data() + *pos, sizeof(len));
  if (len > kMaxFrameBytes) return FrameVerdict::kMalformed;
  if (buffer.size() - *pos - sizeof(len) < len) return FrameVerdict::kNeedMore;
  body->assign(buffer, *pos + sizeof(len), len);
  *pos += sizeof(len) + len;
  return FrameVerdict::kFrame;
}

}  // namespace braid
