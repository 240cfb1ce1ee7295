// Messages between ranks and the bootstrap root. Input is untrusted: every length is bounded
// before anything is allocated, and anything unexpected closes the connection.
//
// The handshake proves the id's secret both ways without sending it:
//   rank -> root  AuthHello     a fresh rank nonce
//   root -> rank  AuthChallenge a fresh root nonce + HMAC(secret, "root", id nonce, both nonces)
//   rank          checks the root's proof: a process that merely listens on the id's address
//                 (a stale NCCL_COMM_ID port, a stranger) cannot answer, and learns nothing
//   rank -> root  RootHello     HMAC(secret, "rank", id nonce, both nonces) + who it is + its info
//   root          checks the rank's proof before reading anything else
// Fresh nonces on both sides make a recorded handshake useless for a later one.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "util/hmac_sha256.h"

namespace braid {

constexpr uint32_t kHelloMagic = 0x4c485242;      // "BRHL"
constexpr uint32_t kChallengeMagic = 0x43485242;  // "BRHC"
constexpr uint32_t kBootstrapVersion = 2;
constexpr size_t kNonceBytes = 16;
constexpr uint32_t kMaxInfoBytes = 4096;
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
  uint32_t infoBytes;
  uint32_t pad;
};

// kFrameRelay: a message for one rank, which the root forwards at once (not part of a round):
// from a rank, its body starts with the int32 rank it is for; from the root, with the int32 rank
// it came from.
enum FrameKind : uint32_t { kFrameData = 1, kFrameError = 2, kFrameBye = 3, kFrameRelay = 4 };

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

/// Checks a hello and the info following it: magic, version, the rank's proof of the secret
/// (constant-time comparison with `expectedProof`, computed by the root for this handshake) and
/// the id's nonce, and bounds on every count, before any allocation. kAdmit fills *hello; the
/// info is the `hello->infoBytes` bytes after it.
inline HelloVerdict examineHello(const std::string& received,
                                 const unsigned char expectedProof[kSha256Bytes], uint64_t nonce,
                                 RootHello* hello) {
  if (received.size() < sizeof(RootHello)) return HelloVerdict::kNeedMore;
  RootHello h;
  memcpy(&h, received.data(), sizeof(h));
  const bool proven = constantTimeEqual(h.proof, expectedProof, kSha256Bytes);
  bool ok = h.magic == kHelloMagic && h.version == kBootstrapVersion && proven &&
            h.nonce == nonce && h.nranks >= 1 && h.nranks <= kMaxRanks && h.rank >= 0 &&
            h.rank < h.nranks && h.infoBytes <= kMaxInfoBytes;
  if (!ok) return HelloVerdict::kReject;
  if (received.size() < sizeof(RootHello) + h.infoBytes) return HelloVerdict::kNeedMore;
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

/// Splits the body of the root's answer to a round into `nranks` length-prefixed entries;
/// false when it is truncated.
inline bool splitRoundReply(const std::string& body, int nranks, std::vector<std::string>* all) {
  all->clear();
  size_t pos = 0;
  for (int r = 0; r < nranks; r++) {
    uint32_t len;
    if (body.size() - pos < sizeof(len)) return false;
    memcpy(&len, body.data() + pos, sizeof(len));
    pos += sizeof(len);
    if (body.size() - pos < len) return false;
    all->push_back(body.substr(pos, len));
    pos += len;
  }
  return true;
}

}  // namespace braid
