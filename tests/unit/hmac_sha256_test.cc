// SHA-256 and HMAC-SHA-256 against FIPS 180-4's examples and RFC 4231's test cases (the
// expected digests were also checked with Python's hashlib and hmac).
#include "util/hmac_sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace braid {
namespace {

std::string hex(const unsigned char* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; i++) {
    snprintf(b, sizeof(b), "%02x", p[i]);
    s += b;
  }
  return s;
}

std::string sha(const std::string& m) {
  unsigned char out[kSha256Bytes];
  sha256(m.data(), m.size(), out);
  return hex(out, sizeof(out));
}

std::string mac(const std::string& key, const std::string& m) {
  unsigned char out[kSha256Bytes];
  MacPart part{m.data(), m.size()};
  hmacSha256(key.data(), key.size(), &part, 1, out);
  return hex(out, sizeof(out));
}

TEST(Sha256, KnownDigests) {
  EXPECT_EQ(sha(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 1000 bytes: several blocks, and a final block where the length does not fit after the pad.
  EXPECT_EQ(sha(std::string(1000, 'a')),
            "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(HmacSha256, Rfc4231Cases) {
  EXPECT_EQ(mac(std::string(20, '\x0b'), "Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(mac("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than a block is hashed first.
  EXPECT_EQ(mac(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First"),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
  // Test case 4: a 25-byte key and 50 bytes of data.
  std::string key4;
  for (char c = 1; c <= 25; c++) key4 += c;
  EXPECT_EQ(mac(key4, std::string(50, '\xcd')),
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
  // Test case 7: key and data both longer than a block.
  EXPECT_EQ(mac(std::string(131, '\xaa'),
                "This is a test using a larger than block-size key and a larger than block-size "
                "data. The key needs to be hashed before being used by the HMAC algorithm."),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, EmptyKeyAndMessage) {
  // libcrypto reads a null key as "keep the previous one": an empty key must still be empty.
  EXPECT_EQ(mac("", ""), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(HmacSha256, PartsAreConcatenated) {
  const std::string key = "0123456789abcdef";
  unsigned char split[kSha256Bytes];
  MacPart parts[] = {{"what do ya ", 11}, {"want for nothing?", 17}};
  hmacSha256(key.data(), key.size(), parts, 2, split);
  EXPECT_EQ(hex(split, sizeof(split)), mac(key, "what do ya want for nothing?"));
}

TEST(ConstantTimeEqual, ComparesEveryByte) {
  unsigned char a[16] = {}, b[16] = {};
  EXPECT_TRUE(constantTimeEqual(a, b, 16));
  b[15] = 1;
  EXPECT_FALSE(constantTimeEqual(a, b, 16));
  EXPECT_TRUE(constantTimeEqual(a, b, 15));
}

}  // namespace
}  // namespace braid
