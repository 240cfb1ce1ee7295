// The 128-byte ncclUniqueId: where the bootstrap root listens, a random secret every connection
// must prove, and a nonce that tells communicators created from one address apart.
#pragma once

#include <cstdint>

#include "nccl.h"
#include "util/socket.h"

namespace braid {

constexpr uint32_t kUniqueIdMagic = 0x31445242;  // "BRD1"
constexpr uint32_t kRootHostedByRank0 = 1u;      // NCCL_COMM_ID / MASTER_ADDR: rank 0 runs the root

struct UniqueIdFields {
  uint32_t magic;
  uint32_t flags;
  unsigned char addr[28];  // sockaddr_in or sockaddr_in6
  uint32_t addrLen;
  unsigned char secret[16];
  uint64_t nonce;
};
static_assert(sizeof(UniqueIdFields) <= sizeof(ncclUniqueId));

/// Builds an id for `addr`; secret and nonce are filled by the caller.
ncclUniqueId packUniqueId(const UniqueIdFields& f);
/// Validates and unpacks an id; ncclInvalidArgument naming what is wrong otherwise.
ncclResult_t unpackUniqueId(const ncclUniqueId& id, UniqueIdFields* f, SockAddr* addr);

/// A fresh id whose root this process hosts (a thread listening on the chosen interface).
ncclResult_t newHostedUniqueId(ncclUniqueId* id);

/// The deterministic id of NCCL_COMM_ID=host:port, or of MASTER_ADDR/MASTER_PORT (torchrun-style,
/// as braidrun sets), with the secret from BRAID_COMM_SECRET (32 hex digits). Returns false when
/// none of these variables is set.
bool uniqueIdFromEnvironment(ncclUniqueId* id, ncclResult_t* result);

}  // namespace braid
