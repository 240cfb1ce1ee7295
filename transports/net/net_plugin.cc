#include "transports/net/net_plugin.h"

#include <climits>
#include <type_traits>
#include <utility>

#include "util/status.h"

namespace braid {
namespace {

// Calls `f` with the library's table as its own versioned type, so each call below is written
// once and `if constexpr` picks the argument shape of that version.
template <class F>
auto withTable(int version, const void* table, F&& f) {
  switch (version) {
    case 8:
      return f(*static_cast<const ncclNet_v8_t*>(table));
    case 9:
      return f(*static_cast<const ncclNet_v9_t*>(table));
    case 10:
      return f(*static_cast<const ncclNet_v10_t*>(table));
    default:
      return f(*static_cast<const ncclNet_v11_t*>(table));
  }
}

template <class T>
constexpr int versionOf() {
  if constexpr (std::is_same_v<T, ncclNet_v8_t>) return 8;
  if constexpr (std::is_same_v<T, ncclNet_v9_t>) return 9;
  if constexpr (std::is_same_v<T, ncclNet_v10_t>) return 10;
  return 11;
}

}  // namespace

NetPlugin::NetPlugin(int version, const void* table, std::string path)
    : version_(version), table_(table), path_(std::move(path)) {}

const char* NetPlugin::name() const {
  return withTable(version_, table_, [](const auto& t) { return t.name ? t.name : "(unnamed)"; });
}

ncclResult_t NetPlugin::init(ncclDebugLogger_t logger) {
  return withTable(version_, table_, [&](const auto& t) {
    constexpr int v = versionOf<std::decay_t<decltype(t)>>();
    if constexpr (v == 11) {
      ncclNetCommConfig_v11_t config{NCCL_NET_TRAFFIC_CLASS_UNDEF};
      return t.init(&context_, 0, &config, logger, nullptr);
    } else if constexpr (v == 10) {
      return t.init(logger, nullptr);
    } else {
      return t.init(logger);
    }
  });
}

ncclResult_t NetPlugin::devices(int* ndev) {
  return withTable(version_, table_, [&](const auto& t) { return t.devices(ndev); });
}

ncclResult_t NetPlugin::properties(int dev, NetDeviceProperties* out) {
  return withTable(version_, table_, [&](const auto& t) {
    constexpr int v = versionOf<std::decay_t<decltype(t)>>();
    std::conditional_t<v == 8, ncclNetProperties_v8_t,
                       std::conditional_t<v == 11, ncclNetProperties_v11_t, ncclNetProperties_v9_t>>
        p{};
    BRAID_TRY(t.getProperties(dev, &p));
    out->name = p.name ? p.name : "";
    out->ptrSupport = p.ptrSupport;
    out->speedMbps = p.speed;
    out->maxRecvs = p.maxRecvs;
    if constexpr (v == 8)
      out->maxMessageBytes = INT_MAX;
    else
      out->maxMessageBytes = p.maxP2pBytes ? p.maxP2pBytes : INT_MAX;
    return ncclSuccess;
  });
}

ncclResult_t NetPlugin::listen(int dev, void* handle, void** listenComm) {
  return withTable(version_, table_, [&](const auto& t) {
    if constexpr (versionOf<std::decay_t<decltype(t)>>() == 11)
      return t.listen(context_, dev, handle, listenComm);
    else
      return t.listen(dev, handle, listenComm);
  });
}

ncclResult_t NetPlugin::connect(int dev, void* handle, void** sendComm) {
  return withTable(version_, table_, [&](const auto& t) {
    constexpr int v = versionOf<std::decay_t<decltype(t)>>();
    // No device offload: a null device handle asks for none.
    if constexpr (v == 11)
      return t.connect(context_, dev, handle, sendComm, nullptr);
    else if constexpr (v == 10)
      return t.connect(dev, &config_, handle, sendComm, nullptr);
    else
      return t.connect(dev, handle, sendComm, nullptr);
  });
}

ncclResult_t NetPlugin::accept(void* listenComm, void** recvComm) {
  return withTable(version_, table_,
                   [&](const auto& t) { return t.accept(listenComm, recvComm, nullptr); });
}

ncclResult_t NetPlugin::regMr(void* comm, void* data, size_t size, void** mhandle) {
  return withTable(version_, table_, [&](const auto& t) {
    return t.regMr(comm, data, size, NCCL_PTR_HOST, mhandle);
  });
}

ncclResult_t NetPlugin::deregMr(void* comm, void* mhandle) {
  return withTable(version_, table_, [&](const auto& t) { return t.deregMr(comm, mhandle); });
}

ncclResult_t NetPlugin::isend(void* sendComm, void* data, size_t size, int tag, void* mhandle,
                              void** request) {
  return withTable(version_, table_, [&](const auto& t) {
    constexpr int v = versionOf<std::decay_t<decltype(t)>>();
    if constexpr (v >= 10)
      return t.isend(sendComm, data, size, tag, mhandle, nullptr, request);
    else if constexpr (v == 9)
      return t.isend(sendComm, data, size, tag, mhandle, request);
    else
      return t.isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
  });
}

ncclResult_t NetPlugin::irecv(void* recvComm, void* data, size_t size, int tag, void* mhandle,
                              void** request) {
  return withTable(version_, table_, [&](const auto& t) {
    constexpr int v = versionOf<std::decay_t<decltype(t)>>();
    void* datas[1] = {data};
    int tags[1] = {tag};
    void* mhandles[1] = {mhandle};
    if constexpr (v == 8) {
      int sizes[1] = {static_cast<int>(size)};
      return t.irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
    } else {
      size_t sizes[1] = {size};
      if constexpr (v >= 10) {
        void* phandles[1] = {nullptr};
        return t.irecv(recvComm, 1, datas, sizes, tags, mhandles, phandles, request);
      } else {
        return t.irecv(recvComm, 1, datas, sizes, tags, mhandles, request);
      }
    }
  });
}

ncclResult_t NetPlugin::test(void* request, int* done, int* size) {
  return withTable(version_, table_, [&](const auto& t) { return t.test(request, done, size); });
}

ncclResult_t NetPlugin::closeSend(void* sendComm) {
  return withTable(version_, table_, [&](const auto& t) { return t.closeSend(sendComm); });
}

ncclResult_t NetPlugin::closeRecv(void* recvComm) {
  return withTable(version_, table_, [&](const auto& t) { return t.closeRecv(recvComm); });
}

ncclResult_t NetPlugin::closeListen(void* listenComm) {
  return withTable(version_, table_, [&](const auto& t) { return t.closeListen(listenComm); });
}

}  // namespace braid
