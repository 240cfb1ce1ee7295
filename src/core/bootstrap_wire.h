// Messages between ranks and the bootstrap root. Input is untrusted: every length is bounded
// before anything is allocated, and anything unexpected closes the connection.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace braid {

constexpr uint32_t kHelloMagic = 0x4c485242;  // "BRHL"
constexpr uint32_t kBootstrapVersion = 1;
constexpr uint32_t kMaxInfoBytes = 4096;
constexpr uint32_t kMaxFrameBytes = 16u << 20;
constexpr int kMaxRanks = 1 << 16;

struct RootHello {
  uint32_t magic;
  uint32_t version;
  unsigned char secret[16];
  uint64_t nonce;
  int32_t nranks;
  int32_t rank;
  uint32_t infoBytes;
  uint32_t pad;
};

enum FrameKind : uint32_t { kFrameData = 1, kFrameError = 2, kFrameBye = 3 };

struct FrameHeader {
  uint32_t kind;
  uint32_t bytes;
};

// The checks below are all the root and a rank do with bytes from the network; they are pure
// functions so the fuzz targets (tests/fuzz) can drive them directly.

/// What the bytes a connection has sent to the root so far amount to.
enum class HelloVerdict { kNeedMore, kAdmit, kReject };

/// Checks a hello and the info following it: magic, version, the communicator's secret
/// (constant-time comparison) and nonce, and bounds on every count, before any allocation.
/// kAdmit fills *hello; the info is the `hello->infoBytes` bytes after it.
inline HelloVerdict examineHello(const std::string& received, const unsigned char secret[16],
                                 uint64_t nonce, RootHello* hello) {
  if (received.size() < sizeof(RootHello)) return HelloVerdict::kNeedMore;
  RootHello h;
  memcpy(&h, received.data(), sizeof(h));
  unsigned char diff = 0;
  for (int i = 0; i < 16; i++) diff |= h.secret[i] ^ secret[i];
  bool ok = h.magic == kHelloMagic && h.version == kBootstrapVersion && diff == 0 &&
            h.nonce == nonce && h.nranks >= 1 && h.nranks <= kMaxRanks && h.rank >= 0 &&
            h.rank < h.nranks && h.infoBytes <= kMaxInfoBytes;
  if (!ok) return HelloVerdict::kReject;
  if (received.size() < sizeof(RootHello) + h.infoBytes) return HelloVerdict::kNeedMore;
  *hello = h;
  return HelloVerdict::kAdmit;
}

/// What the front of a rank's byte stream to the root holds.
enum class FrameVerdict { kNeedMore, kFrame, kMalformed };

/// Takes one frame a rank sent (data or bye, at most kMaxFrameBytes) off the front of `buffer`.
inline FrameVerdict takeRankFrame(std::string* buffer, FrameHeader* header, std::string* body) {
  if (buffer->size() < sizeof(FrameHeader)) return FrameVerdict::kNeedMore;
  FrameHeader h;
  memcpy(&h, buffer->data(), sizeof(h));
  if (h.bytes > kMaxFrameBytes || (h.kind != kFrameData && h.kind != kFrameBye))
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
