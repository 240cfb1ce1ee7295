// SHA-256 and HMAC-SHA-256 through OpenSSL's libcrypto: a security primitive is taken from a
// vetted, constant-time implementation rather than written here (docs/design.md, "Bootstrap").
#include "util/hmac_sha256.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>
#include <stdexcept>

namespace braid {
namespace {

// Only allocation failure makes these calls fail; there is no proof to give without them.
[[noreturn]] void cryptoFailed(const char* what) {
  throw std::runtime_error(std::string("libcrypto: ") + what + " failed");
}

struct MacDeleter {
  void operator()(EVP_MAC* mac) const { EVP_MAC_free(mac); }
  void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

// Fetched once: the fetch searches libcrypto's providers, the context is cheap.
EVP_MAC* hmacAlgorithm() {
  static const std::unique_ptr<EVP_MAC, MacDeleter> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
  if (!mac) cryptoFailed("fetching HMAC");
  return mac.get();
}

}  // namespace

void sha256(const void* data, size_t len, unsigned char out[kSha256Bytes]) {
  if (EVP_Digest(data, len, out, nullptr, EVP_sha256(), nullptr) != 1) cryptoFailed("SHA-256");
}

void hmacSha256(const void* key, size_t keyLen, const MacPart* parts, size_t nparts,
                unsigned char out[kSha256Bytes]) {
  std::unique_ptr<EVP_MAC_CTX, MacDeleter> ctx(EVP_MAC_CTX_new(hmacAlgorithm()));
  if (!ctx) cryptoFailed("HMAC context");
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_END};
  // A null key would mean "keep the previous key": an empty key still gets a valid pointer.
  static const unsigned char kEmptyKey = 0;
  const auto* keyBytes = keyLen ? static_cast<const unsigned char*>(key) : &kEmptyKey;
  if (EVP_MAC_init(ctx.get(), keyBytes, keyLen, params) != 1) cryptoFailed("HMAC key setup");
  for (size_t i = 0; i < nparts; i++) {
    if (EVP_MAC_update(ctx.get(), static_cast<const unsigned char*>(parts[i].data), parts[i].len) !=
        1) {
      cryptoFailed("HMAC update");
    }
  }
  size_t written = 0;
  if (EVP_MAC_final(ctx.get(), out, &written, kSha256Bytes) != 1 || written != kSha256Bytes)
    cryptoFailed("HMAC final");
}

bool constantTimeEqual(const void* a, const void* b, size_t len) {
  return CRYPTO_memcmp(a, b, len) == 0;
}

}  // namespace braid
