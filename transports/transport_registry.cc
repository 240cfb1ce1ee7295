// The transports in priority order: one line each.
#include <algorithm>

#include "transports/transport.h"

namespace braid {

Transport* p2pTransport();
Transport* localTransport();
Transport* shmTransport();
Transport* netTransport();
Transport* tcpTransport();

const std::vector<Transport*>& transportRegistry() {
  static const std::vector<Transport*> registry = {
      p2pTransport(),    // device slots between GPUs of one host (over local or shm)
      localTransport(),  // same process
      shmTransport(),    // same host
      netTransport(),    // network, through a plugin (NCCL_NET_PLUGIN, NCCL_NET)
      tcpTransport(),    // network
  };
  return registry;
}

namespace {

bool allowed(const TransportContext& ctx, const Transport* t) {
  return ctx.allowed.empty() ||
         std::find(ctx.allowed.begin(), ctx.allowed.end(), t->name()) != ctx.allowed.end();
}

}  // namespace

Transport* chooseTransport(const TransportContext& ctx, int peer) {
  for (Transport* t : transportRegistry())
    if (allowed(ctx, t) && t->canConnect(ctx, peer)) return t;
  return nullptr;
}

Transport* chooseHostTransport(const TransportContext& ctx, int peer) {
  for (Transport* t : transportRegistry())
    if (!t->carriesDeviceSlots() && allowed(ctx, t) && t->canConnect(ctx, peer)) return t;
  return nullptr;
}

}  // namespace braid
