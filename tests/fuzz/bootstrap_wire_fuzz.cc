// Fuzz target: everything the bootstrap reads from the network (src/core/bootstrap_wire.h). The
// first byte picks the reader:
//   0: the root examining a connection's opening (AuthHello) and then its hello, fed in
//      fuzzer-chosen pieces as recv() would deliver them (with the second byte's low bit set,
//      magics, versions, the proof and the nonce are made right, so the checks behind them are
//      reached);
//   1: the root taking frames off an admitted rank's stream;
//   2: a rank taking all-gather entries off its previous rank's ring stream;
//   3: a rank checking the root's ring assignment (nranks from the second byte);
//   4: a rank checking what a connection to its ring port sends first, in pieces (with the
//      second byte's low bit set, the magic, version, rank and token are made right).
// Properties: no crash or overread; verdicts are final (more bytes never turn a rejection into
// an admission); everything admitted or taken respects the bounds.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/bootstrap_wire.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace braid;

constexpr unsigned char kProof[kSha256Bytes] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                                12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                                                23, 24, 25, 26, 27, 28, 29, 30, 31, 32};
constexpr uint64_t kNonce = 0x1122334455667788ull;
constexpr unsigned char kToken[kTokenBytes] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6};
constexpr int32_t kPrevRank = 3;

void hello(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const bool fixUp = data[1] & 1;
  std::string bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (fixUp && bytes.size() >= sizeof(AuthHello)) {
    AuthHello a;
    memcpy(&a, bytes.data(), sizeof(a));
    a.magic = kHelloMagic;
    a.version = kBootstrapVersion;
    memcpy(bytes.data(), &a, sizeof(a));
  }
  if (fixUp && bytes.size() >= sizeof(AuthHello) + sizeof(RootHello)) {
    RootHello h;
    memcpy(&h, bytes.data() + sizeof(AuthHello), sizeof(h));
    h.magic = kHelloMagic;
    h.version = kBootstrapVersion;
    memcpy(h.proof, kProof, sizeof(kProof));
    h.nonce = kNonce;
    memcpy(bytes.data() + sizeof(AuthHello), &h, sizeof(h));
  }
  // Deliver in pieces whose sizes come from the data itself, as a slow sender would; the root
  // reads the opening first, then (once it answered) the hello from what follows.
  std::string received;
  bool opened = false;
  HelloVerdict last = HelloVerdict::kNeedMore;
  size_t pos = 0, step = 1 + (data[1] >> 1);
  while (pos < bytes.size()) {
    size_t n = std::min(step, bytes.size() - pos);
    received.append(bytes, pos, n);
    pos += n;
    step = 1 + static_cast<unsigned char>(bytes[pos - 1]) % 64;
    if (!opened) {
      AuthHello a{};
      HelloVerdict v = examineAuthHello(received, &a);
      if (v == HelloVerdict::kReject) {
        FUZZ_CHECK(received.size() >= sizeof(AuthHello));
        return;
      }
      if (v == HelloVerdict::kNeedMore) continue;
      FUZZ_CHECK(a.magic == kHelloMagic && a.version == kBootstrapVersion);
      received.erase(0, sizeof(AuthHello));
      opened = true;
    }
    RootHello h{};
    HelloVerdict v = examineHello(received, kProof, kNonce, &h);
    if (last == HelloVerdict::kReject) FUZZ_CHECK(v == HelloVerdict::kReject);
    if (last == HelloVerdict::kAdmit) FUZZ_CHECK(v == HelloVerdict::kAdmit);
    if (v == HelloVerdict::kAdmit) {
      FUZZ_CHECK(h.magic == kHelloMagic && h.nonce == kNonce);
      FUZZ_CHECK(memcmp(h.proof, kProof, sizeof(kProof)) == 0);
      FUZZ_CHECK(h.nranks >= 1 && h.nranks <= kMaxRanks && h.rank >= 0 && h.rank < h.nranks);
      FUZZ_CHECK(h.ringAddrLen <= kRingAddrBytes);
      FUZZ_CHECK(h.nranks == 1 ? h.ringAddrLen == 0 : validRingAddress(h.ringAddr, h.ringAddrLen));
      FUZZ_CHECK(received.size() >= sizeof(RootHello));
    }
    if (!fixUp)
      FUZZ_CHECK(v != HelloVerdict::kAdmit ||
                 memcmp(bytes.data() + sizeof(AuthHello) + 8, kProof, sizeof(kProof)) == 0);
    last = v;
  }
}

void frames(const uint8_t* data, size_t size) {
  std::string buffer(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t consumed = 0;
  for (;;) {
    FrameHeader h{};
    std::string body;
    size_t before = buffer.size();
    FrameVerdict v = takeRankFrame(&buffer, &h, &body);
    if (v != FrameVerdict::kFrame) {
      FUZZ_CHECK(buffer.size() == before);
      break;
    }
    FUZZ_CHECK(h.kind == kFrameData || h.kind == kFrameBye ||
               (h.kind == kFrameRelay && h.bytes >= sizeof(int32_t)));
    FUZZ_CHECK(h.bytes <= kMaxFrameBytes && body.size() == h.bytes);
    FUZZ_CHECK(before - buffer.size() == sizeof(FrameHeader) + h.bytes);
    FUZZ_CHECK(memcmp(body.data(), data + 1 + consumed + sizeof(FrameHeader), h.bytes) == 0);
    consumed += sizeof(FrameHeader) + h.bytes;
  }
  FUZZ_CHECK(consumed + buffer.size() == size - 1);
}

void ringEntries(const uint8_t* data, size_t size) {
  const std::string buffer(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t pos = 0;
  for (;;) {
    std::string body;
    const size_t before = pos;
    const FrameVerdict v = takeRingEntry(buffer, &pos, &body);
    if (v != FrameVerdict::kFrame) {
      FUZZ_CHECK(pos == before);
      uint32_t len = 0;
      if (v == FrameVerdict::kMalformed) {
        FUZZ_CHECK(buffer.size() - pos >= sizeof(len));
        memcpy(&len, buffer.data() + pos, sizeof(len));
        FUZZ_CHECK(len > kMaxFrameBytes);
      }
      break;
    }
    FUZZ_CHECK(body.size() <= kMaxFrameBytes);
    FUZZ_CHECK(pos == before + sizeof(uint32_t) + body.size() && pos <= buffer.size());
    FUZZ_CHECK(memcmp(body.data(), buffer.data() + before + sizeof(uint32_t), body.size()) == 0);
  }
}

void assignment(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const int nranks = 1 + data[1] % 4;
  const std::string body(reinterpret_cast<const char*>(data) + 2, size - 2);
  RingAssignment a{};
  if (!examineRingAssignment(body, nranks, &a)) return;
  FUZZ_CHECK(body.size() == sizeof(RingAssignment));
  FUZZ_CHECK(a.nextAddrLen <= kRingAddrBytes);
  FUZZ_CHECK(nranks > 1 ? validRingAddress(a.nextAddr, a.nextAddrLen) : a.nextAddrLen == 0);
}

void ringHello(const uint8_t* data, size_t size) {
  if (size < 2) return;
  const bool fixUp = data[1] & 1;
  std::string bytes(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (fixUp && bytes.size() >= sizeof(RingHello)) {
    RingHello h;
    memcpy(&h, bytes.data(), sizeof(h));
    h.magic = kRingMagic;
    h.version = kBootstrapVersion;
    h.rank = kPrevRank;
    memcpy(h.token, kToken, kTokenBytes);
    memcpy(bytes.data(), &h, sizeof(h));
  }
  std::string received;
  HelloVerdict last = HelloVerdict::kNeedMore;
  size_t pos = 0, step = 1 + (data[1] >> 1);
  while (pos < bytes.size()) {
    const size_t n = std::min(step, bytes.size() - pos);
    received.append(bytes, pos, n);
    pos += n;
    step = 1 + static_cast<unsigned char>(bytes[pos - 1]) % 16;
    const HelloVerdict v = examineRingHello(received, kToken, kPrevRank);
    if (last != HelloVerdict::kNeedMore) FUZZ_CHECK(v == last);
    if (v == HelloVerdict::kNeedMore) FUZZ_CHECK(received.size() < sizeof(RingHello));
    if (v == HelloVerdict::kAdmit) {
      RingHello h;
      memcpy(&h, received.data(), sizeof(h));
      FUZZ_CHECK(h.magic == kRingMagic && h.version == kBootstrapVersion && h.rank == kPrevRank);
      FUZZ_CHECK(memcmp(h.token, kToken, kTokenBytes) == 0);
    }
    last = v;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] % 5) {
    case 0:
      hello(data, size);
      break;
    case 1:
      frames(data, size);
      break;
    case 2:
      ringEntries(data, size);
      break;
    case 3:
      assignment(data, size);
      break;
    default:
      ringHello(data, size);
      break;
  }
  return 0;
}
