// Messages between ranks and the bootstrap root. Input is untrusted: every length is bounded
// before anything is allocated, and anything unexpected closes the connection.
#pragma once

#include <cstdint>

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

}  // namespace braid
