#include "core/unique_id.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/bootstrap_root.h"
#include "util/settings.h"
#include "util/log.h"
#include "util/random.h"
#include "util/status.h"

namespace braid {

ncclUniqueId packUniqueId(const UniqueIdFields& f) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  memcpy(id.internal, &f, sizeof(f));
  return id;
}

ncclResult_t unpackUniqueId(const ncclUniqueId& id, UniqueIdFields* f, SockAddr* addr) {
  memcpy(f, id.internal, sizeof(*f));
  if (f->magic != kUniqueIdMagic)
    return fail(ncclInvalidArgument,
                "commId: not a unique id made by ncclGetUniqueId (magic 0x%08x)", f->magic);
  if (f->addrLen != sizeof(sockaddr_in) && f->addrLen != sizeof(sockaddr_in6))
    return fail(ncclInvalidArgument, "commId: corrupt address length %u", f->addrLen);
  *addr = SockAddr{};
  memcpy(&addr->storage, f->addr, f->addrLen);
  addr->len = f->addrLen;
  if (addr->family() != AF_INET && addr->family() != AF_INET6)
    return fail(ncclInvalidArgument, "commId: corrupt address family %d", addr->family());
  if (addr->port() == 0) return fail(ncclInvalidArgument, "commId: port 0");
  for (size_t i = sizeof(*f); i < sizeof(id.internal); i++)
    if (id.internal[i] != 0)
      return fail(ncclInvalidArgument, "commId: corrupt padding at byte %zu", i);
  return ncclSuccess;
}

ncclResult_t newHostedUniqueId(ncclUniqueId* id) {
  UniqueIdFields f{};
  f.magic = kUniqueIdMagic;
  SockAddr addr;
  BRAID_TRY(findInterfaceAddress(&addr, nullptr));
  int fd = -1;
  BRAID_TRY(listenOn(&addr, &fd, kRootBacklog));
  memcpy(f.addr, &addr.storage, addr.len);
  f.addrLen = addr.len;
  if (!secureRandom(f.secret, sizeof(f.secret)) || !secureRandom(&f.nonce, sizeof(f.nonce))) {
    close(fd);
    return fail(ncclSystemError, "no random bytes for the communicator secret");
  }
  startBootstrapRoot(fd, f, settingDouble(Setting::kTimeoutS));
  *id = packUniqueId(f);
  BRAID_INFO(kSubsysBootstrap, "unique id: bootstrap root at %s", addr.toString().c_str());
  return ncclSuccess;
}

namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Exactly 32 hex digits (strtol would also take signs and spaces, so that different strings
// gave the same secret).
bool parseSecret(const std::string& hex, unsigned char out[16]) {
  if (hex.size() != 32) return false;
  for (int i = 0; i < 16; i++) {
    int hi = hexDigit(hex[2 * i]), lo = hexDigit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

}  // namespace

bool uniqueIdFromEnvironment(ncclUniqueId* id, ncclResult_t* result) {
  std::string where = settingText(Setting::kNcclCommId);
  if (where.empty()) {
    const char* host = settingRaw(Setting::kMasterAddr);
    const char* port = settingRaw(Setting::kMasterPort);
    if (!host || !port) return false;
    where = std::string(host) + ":" + port;
  }
  SockAddr addr;
  *result = parseHostPort(where, &addr);
  if (*result != ncclSuccess) return true;
  if (addr.port() == 0 || addr.len > sizeof(UniqueIdFields::addr)) {
    *result = fail(ncclInvalidArgument, "bootstrap address '%s': no usable port", where.c_str());
    return true;
  }
  UniqueIdFields f{};
  f.magic = kUniqueIdMagic;
  f.flags = kRootHostedByRank0;
  memcpy(f.addr, &addr.storage, addr.len);
  f.addrLen = addr.len;
  std::string secret = settingText(Setting::kCommSecret);
  if (!secret.empty()) {
    if (!parseSecret(secret, f.secret)) {
      *result = fail(ncclInvalidArgument, "BRAID_COMM_SECRET must be 32 hex digits");
      return true;
    }
  } else {
    BRAID_WARN(
        "bootstrap at %s without BRAID_COMM_SECRET: any process that reaches the port can "
        "join; braidrun sets a secret",
        where.c_str());
  }
  // Same nonce in every rank: derived from the address and the secret.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : where) h = (h ^ c) * 1099511628211ull;
  for (unsigned char c : f.secret) h = (h ^ c) * 1099511628211ull;
  f.nonce = h;
  *id = packUniqueId(f);
  *result = ncclSuccess;
  return true;
}

}  // namespace braid
