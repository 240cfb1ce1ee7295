#include <algorithm>

#include "transports/transport.h"

namespace braid {

// One line per transport, in priority order: same process, same host, network.
Transport* localTransport();
Transport* shmTransport();
Transport* tcpTransport();

const std::vector<Transport*>& transportRegistry() {
  static const std::vector<Transport*> registry = {
      localTransport(),
      shmTransport(),
      tcpTransport(),
  };
  return registry;
}

Transport* chooseTransport(const TransportContext& ctx, int peer) {
  for (Transport* t : transportRegistry()) {
    if (!ctx.allowed.empty() &&
        std::find(ctx.allowed.begin(), ctx.allowed.end(), t->name()) == ctx.allowed.end())
      continue;
    if (t->canConnect(ctx, peer)) return t;
  }
  return nullptr;
}

}  // namespace braid
