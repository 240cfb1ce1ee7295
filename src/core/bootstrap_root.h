// The bootstrap root: a thread that admits the ranks of one communicator (those proving the
// secret), introduces each to its next on the bootstrap ring (the all-gathers run there), then
// relays messages between ranks and answers barriers until every rank has said goodbye.
// Strangers, slow or malformed connections are dropped without disturbing the rendezvous.
#pragma once

#include <cstdint>

#include "core/unique_id.h"

namespace braid {

/// The accept queue the root's port is opened with (the kernel caps it at somaxconn): every rank
/// connects at once at init, and a connection the queue drops waits a 1 s SYN retransmission
/// (with 128, 256 thread ranks took 1.1 s to join instead of 0.1 s).
constexpr int kRootBacklog = 4096;

/// Starts the root on an already listening socket (ownership passes to the root thread).
void startBootstrapRoot(int listenFd, const UniqueIdFields& id, double timeoutS);

/// Bytes every root of this process has written to ranks so far (tests: what init costs the
/// root as the communicator grows).
uint64_t bootstrapRootBytesSent();

}  // namespace braid
