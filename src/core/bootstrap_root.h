// The bootstrap root: a thread that admits the ranks of one communicator (those proving the
// secret), then serves all-gather rounds (every rank sends a frame, everyone gets all frames) until
// every rank has said goodbye. Strangers, slow or malformed connections are dropped without
// disturbing the rendezvous.
#pragma once

#include "core/unique_id.h"

namespace braid {

/// Starts the root on an already listening socket (ownership passes to the root thread).
void startBootstrapRoot(int listenFd, const UniqueIdFields& id, double timeoutS);

}  // namespace braid
