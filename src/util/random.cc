#include "util/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdio>

namespace braid {

bool secureRandom(void* buf, size_t len) {
  auto* p = static_cast<unsigned char*>(buf);
  while (len > 0) {
    ssize_t n = getrandom(p, len, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

std::string randomHex(size_t len) {
  unsigned char bytes[64];
  if (len > sizeof(bytes)) len = sizeof(bytes);
  secureRandom(bytes, len);
  std::string out;
  char h[3];
  for (size_t i = 0; i < len; i++) {
    snprintf(h, sizeof(h), "%02x", bytes[i]);
    out += h;
  }
  return out;
}

}  // namespace braid
