// Fuzz target: the unique id parser. The first 128 bytes are taken as an ncclUniqueId (as if a
// launcher passed garbage); the rest as "NCCL_COMM_ID\nBRAID_COMM_SECRET". Properties: parsing
// never crashes; an accepted id has a consistent, non-zero address and packs back to the same
// bytes; an id made from the environment always parses; a secret is only accepted as exactly
// 32 hex digits.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/unique_id.h"
#include "fuzz/fuzz_check.h"

namespace {

// Hosts that getaddrinfo parses without asking DNS (a fuzzer must not query the network).
bool numericHost(const std::string& where) {
  std::string host;
  int family = AF_INET;
  if (!where.empty() && where[0] == '[') {
    size_t close = where.find(']');
    if (close == std::string::npos) return true;  // refused before any lookup
    host = where.substr(1, close - 1);
    family = AF_INET6;
  } else {
    size_t colon = where.rfind(':');
    if (colon == std::string::npos) return true;
    host = where.substr(0, colon);
  }
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(family, host.c_str(), buf) == 1;
}

bool allHex(const std::string& s) {
  for (char c : s)
    if (!isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace braid;
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  memcpy(id.internal, data, size < sizeof(id.internal) ? size : sizeof(id.internal));
  UniqueIdFields f;
  SockAddr addr;
  if (unpackUniqueId(id, &f, &addr) == ncclSuccess) {
    FUZZ_CHECK(addr.len == f.addrLen);
    FUZZ_CHECK(addr.family() == AF_INET || addr.family() == AF_INET6);
    FUZZ_CHECK(addr.port() != 0);
    ncclUniqueId again = packUniqueId(f);
    FUZZ_CHECK(memcmp(&again, &id, sizeof(id)) == 0);
    FUZZ_CHECK(!addr.toString().empty());
  }
  if (size <= sizeof(id.internal)) return 0;

  std::string rest(reinterpret_cast<const char*>(data) + sizeof(id.internal),
                   size - sizeof(id.internal));
  rest = rest.substr(0, rest.find('\0'));  // environment strings end at a NUL
  size_t cut = rest.find('\n');
  std::string where = rest.substr(0, cut);
  std::string secret = cut == std::string::npos ? "" : rest.substr(cut + 1);
  if (where.empty() || !numericHost(where)) return 0;
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
  setenv("NCCL_COMM_ID", where.c_str(), 1);
  if (secret.empty())
    unsetenv("BRAID_COMM_SECRET");
  else
    setenv("BRAID_COMM_SECRET", secret.c_str(), 1);
  ncclUniqueId made;
  ncclResult_t result = ncclInternalError;
  FUZZ_CHECK(uniqueIdFromEnvironment(&made, &result));
  if (result == ncclSuccess) {
    FUZZ_CHECK(unpackUniqueId(made, &f, &addr) == ncclSuccess);
    FUZZ_CHECK(f.flags == kRootHostedByRank0);
    if (!secret.empty()) FUZZ_CHECK(secret.size() == 32 && allHex(secret));
  }
  return 0;
}
