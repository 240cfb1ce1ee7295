// Who and where this process is: the host hash decides shared memory, the process hash decides
// direct pointers. Processes in different network namespaces count as different hosts (they are
// containers or test hosts, and must talk TCP); NCCL_HOSTID overrides the host part.
#pragma once

#include "transports/transport.h"

namespace braid {

PeerInfo localPeerInfo(int rank);

}  // namespace braid
