// Finding the network a communicator crosses hosts with, as NCCL does: the plugin libraries
// NCCL_NET_PLUGIN names (a comma-separated list; a name X means libnccl-net-X.so, a path or a
// lib*.so name is opened as given; "none": no plugin; unset: libnccl-net.so if there is one),
// each loaded once per process, on first sight (NCCL_NET_PLUGIN is read at every communicator's
// init, NCCL's only at the first), at the newest interface version it exports (v11 to v8), then
// Braid's own TCP, whose network name is "Socket" as NCCL's. NCCL_NET (or ncclConfig_t.netName)
// picks a network by name; without it the first plugin that initialised with a device wins.
#pragma once

#include <string>

#include "nccl.h"
#include "transports/net/net_plugin.h"

namespace braid {

/// Braid's own TCP transport's network name (NCCL's internal socket network's).
constexpr const char* kInternalNetworkName = "Socket";

/// The network for a communicator that asked for `requested` (empty: no preference). *plugin is
/// null for Braid's own TCP. Asking for a network that is not there is ncclInvalidArgument, with
/// every plugin's fate (which file, which symbol or version, which call failed) in the message.
/// Braid's extension to NCCL's rule: a requested name that no loaded plugin has makes Braid try
/// libnccl-net-<name in lower case>.so, so NCCL_NET=UCX alone finds libnccl-net-ucx.so.
ncclResult_t selectNetwork(const std::string& requested, NetPlugin** plugin);

/// One line per plugin library tried so far, with what happened to it (for logs and errors).
std::string netPluginReport();

}  // namespace braid
