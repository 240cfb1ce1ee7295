// HMAC-SHA-256 (FIPS 180-4, RFC 2104; OpenSSL's libcrypto computes it), for proving knowledge of
// a communicator's secret without sending it: each side answers the other's fresh nonce with a
// MAC keyed by the secret, so a listener on the wire, or a stranger posing as the bootstrap root,
// learns nothing it can reuse.
#pragma once

#include <cstddef>
#include <cstdint>

namespace braid {

constexpr size_t kSha256Bytes = 32;

/// SHA-256 of `len` bytes at `data`.
void sha256(const void* data, size_t len, unsigned char out[kSha256Bytes]);

/// HMAC-SHA-256 of the concatenation of `parts` (pointer, length pairs) under `key`.
struct MacPart {
  const void* data;
  size_t len;
};
void hmacSha256(const void* key, size_t keyLen, const MacPart* parts, size_t nparts,
                unsigned char out[kSha256Bytes]);

/// Constant-time comparison of two byte strings of length `len`.
bool constantTimeEqual(const void* a, const void* b, size_t len);

}  // namespace braid
