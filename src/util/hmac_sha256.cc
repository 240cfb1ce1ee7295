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
  void operator()(EVP_MD* md) const { EVP_MD_free(md); }
  void operator()(EVP_MAC* mac) const { EVP_MAC_free(mac); }
  void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

// SHA-256 and an HMAC-SHA-256 context without a key, made when the library loads: each call
// duplicates it and adds its key, so no call looks HMAC or SHA-256 up in libcrypto's provider
// store. A lookup takes a lock, and a process that forks while another of its threads holds that
// lock (or is inside a first call's one-time setup) leaves the child blocked for good; the rank
// harness and launchers fork ranks from processes whose bootstrap root thread is checking proofs.
class HmacTemplate {
 public:
  HmacTemplate() {
    sha256_.reset(EVP_MD_fetch(nullptr, "SHA256", nullptr));
    mac_.reset(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
    if (!mac_) return;
    ctx_.reset(EVP_MAC_CTX_new(mac_.get()));
    char digest[] = "SHA256";
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    if (ctx_ && EVP_MAC_CTX_set_params(ctx_.get(), params) != 1) ctx_.reset();
  }
  /// A fresh context for one MAC.
  EVP_MAC_CTX* fresh() const {
    if (!ctx_) cryptoFailed("setting up HMAC-SHA-256");
    return EVP_MAC_CTX_dup(ctx_.get());
  }
  const EVP_MD* sha256() const {
    if (!sha256_) cryptoFailed("fetching SHA-256");
    return sha256_.get();
  }

 private:
  std::unique_ptr<EVP_MD, MacDeleter> sha256_;
  std::unique_ptr<EVP_MAC, MacDeleter> mac_;
  std::unique_ptr<EVP_MAC_CTX, MacDeleter> ctx_;
};

const HmacTemplate kHmac;

}  // namespace

void sha256(const void* data, size_t len, unsigned char out[kSha256Bytes]) {
  if (EVP_Digest(data, len, out, nullptr, kHmac.sha256(), nullptr) != 1) cryptoFailed("SHA-256");
}

void hmacSha256(const void* key, size_t keyLen, const MacPart* parts, size_t nparts,
                unsigned char out[kSha256Bytes]) {
  std::unique_ptr<EVP_MAC_CTX, MacDeleter> ctx(kHmac.fresh());
  if (!ctx) cryptoFailed("HMAC context");
  // A null key would mean "keep the previous key": an empty key still gets a valid pointer.
  static const unsigned char kEmptyKey = 0;
  const auto* keyBytes = keyLen ? static_cast<const unsigned char*>(key) : &kEmptyKey;
  if (EVP_MAC_init(ctx.get(), keyBytes, keyLen, nullptr) != 1) cryptoFailed("HMAC key setup");
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
