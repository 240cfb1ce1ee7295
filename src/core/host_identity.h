// Who and where this process is: the host hash decides shared memory, the process hash decides
// direct pointers. Processes in different network namespaces count as different hosts (they are
// containers or test hosts, and must talk TCP); NCCL_HOSTID overrides the host part.
#pragma once

#include "transports/transport.h"

namespace braid {

PeerInfo localPeerInfo(int rank);

/// The cores the ranks on `rank`'s host may use between them: the union of their affinity masks
/// (ranks pinned one per core count every core; ranks confined to one core count one). The same
/// answer on every rank that holds the same PeerInfos.
int hostCores(const std::vector<PeerInfo>& peers, int rank);

}  // namespace braid
