// libnccl-net-ucx.so's exports: the UCX network (ucx_net.h) as ncclNetPlugin_v8 .. v11, each in
// its version's argument shapes, all named "UCX". UCX_PLUGIN_ONLY_VERSION=N builds a library that
// exports only version N (the loader's tests use one per version).
#include <cstring>

#include "transports/net/ucx/ucx_net.h"

#define EXPORT __attribute__((visibility("default")))

namespace {

using namespace braid::ucxnet;

// Not offered: device offload (getDeviceMr, irecvConsumed), virtual NICs (makeVDevice), DMA-BUF
// registration; left NULL, which NCCL and Braid read as "not supported".

template <class Props>
ncclResult_t getProperties(int dev, Props* out) {
  if (dev != 0) return ncclInvalidArgument;
  ncclNetProperties_v11_t p;
  properties(&p);
  memset(out, 0, sizeof(*out));
  out->name = p.name;
  out->pciPath = p.pciPath;
  out->guid = p.guid;
  out->ptrSupport = p.ptrSupport;
  out->regIsGlobal = p.regIsGlobal;
  out->speed = p.speed;
  out->port = p.port;
  out->latency = p.latency;
  out->maxComms = p.maxComms;
  out->maxRecvs = p.maxRecvs;
  out->netDeviceType = p.netDeviceType;
  out->netDeviceVersion = p.netDeviceVersion;
  if constexpr (requires { out->maxP2pBytes; }) {
    out->forceFlush = p.forceFlush;
    out->vProps.ndevs = p.vProps.ndevs;
    out->vProps.devs[0] = p.vProps.devs[0];
    out->maxP2pBytes = p.maxP2pBytes;
    out->maxCollBytes = p.maxCollBytes;
  }
  if constexpr (requires { out->maxMultiRequestSize; })
    out->maxMultiRequestSize = p.maxMultiRequestSize;
  return ncclSuccess;
}

[[maybe_unused]] ncclResult_t init8(ncclDebugLogger_t logger) {
  return init(logger);
}
[[maybe_unused]] ncclResult_t init10(ncclDebugLogger_t logger, ncclProfilerCallback_t) {
  return init(logger);
}
[[maybe_unused]] ncclResult_t init11(void** ctx, uint64_t, ncclNetCommConfig_v11_t*,
                                     ncclDebugLogger_t logger, ncclProfilerCallback_t) {
  // One network for the whole process: no per-communicator state. Still not NULL, for a caller
  // that would read NULL as "no context".
  static char context;
  *ctx = &context;
  return init(logger);
}
[[maybe_unused]] ncclResult_t finalize11(void*) {
  return finalize();
}
[[maybe_unused]] ncclResult_t listen11(void*, int dev, void* handle, void** l) {
  return listen(dev, handle, l);
}
[[maybe_unused]] ncclResult_t connect8(int dev, void* handle, void** s,
                                       ncclNetDeviceHandle_v8_t**) {
  return connect(dev, handle, s);
}
[[maybe_unused]] ncclResult_t connect10(int dev, ncclNetCommConfig_v10_t*, void* handle, void** s,
                                        ncclNetDeviceHandle_v10_t**) {
  return connect(dev, handle, s);
}
[[maybe_unused]] ncclResult_t connect11(void*, int dev, void* handle, void** s,
                                        ncclNetDeviceHandle_v11_t**) {
  return connect(dev, handle, s);
}
ncclResult_t acceptAny(void* l, void** r, ncclNetDeviceHandle_v8_t**) {
  return accept(l, r);
}
[[maybe_unused]] ncclResult_t isend8(void* c, void* data, int size, int tag, void*, void** req) {
  return isend(c, data, static_cast<size_t>(size), tag, req);
}
[[maybe_unused]] ncclResult_t isend9(void* c, void* data, size_t size, int tag, void*, void** req) {
  return isend(c, data, size, tag, req);
}
[[maybe_unused]] ncclResult_t isend10(void* c, void* data, size_t size, int tag, void*, void*,
                                      void** req) {
  return isend(c, data, size, tag, req);
}
[[maybe_unused]] ncclResult_t irecv8(void* c, int n, void** data, int* sizes, int* tags, void**,
                                     void** req) {
  size_t wide[1] = {n > 0 ? static_cast<size_t>(sizes[0]) : 0};
  return irecv(c, n, data, wide, tags, req);
}
[[maybe_unused]] ncclResult_t irecv9(void* c, int n, void** data, size_t* sizes, int* tags, void**,
                                     void** req) {
  return irecv(c, n, data, sizes, tags, req);
}
[[maybe_unused]] ncclResult_t irecv10(void* c, int n, void** data, size_t* sizes, int* tags, void**,
                                      void**, void** req) {
  return irecv(c, n, data, sizes, tags, req);
}
ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;  // host memory: nothing to flush
  return ncclSuccess;
}

}  // namespace

extern "C" {
#if !defined(UCX_PLUGIN_ONLY_VERSION) || UCX_PLUGIN_ONLY_VERSION == 8
EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
    "UCX",       init8,    devices,   getProperties<ncclNetProperties_v8_t>,
    listen,      connect8, acceptAny, regMr,
    nullptr,     deregMr,  isend8,    irecv8,
    iflush,      test,     closeSend, closeRecv,
    closeListen, nullptr,  nullptr};
#endif
#if !defined(UCX_PLUGIN_ONLY_VERSION) || UCX_PLUGIN_ONLY_VERSION == 9
EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
    "UCX",       init8,    devices,   getProperties<ncclNetProperties_v9_t>,
    listen,      connect8, acceptAny, regMr,
    nullptr,     deregMr,  isend9,    irecv9,
    iflush,      test,     closeSend, closeRecv,
    closeListen, nullptr,  nullptr,   nullptr};
#endif
#if !defined(UCX_PLUGIN_ONLY_VERSION) || UCX_PLUGIN_ONLY_VERSION == 10
EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    "UCX",       init10,    devices,   getProperties<ncclNetProperties_v10_t>,
    listen,      connect10, acceptAny, regMr,
    nullptr,     deregMr,   isend10,   irecv10,
    iflush,      test,      closeSend, closeRecv,
    closeListen, nullptr,   nullptr,   nullptr};
#endif
#if !defined(UCX_PLUGIN_ONLY_VERSION) || UCX_PLUGIN_ONLY_VERSION == 11
EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    "UCX",       init11,    devices,   getProperties<ncclNetProperties_v11_t>,
    listen11,    connect11, acceptAny, regMr,
    nullptr,     deregMr,   isend10,   irecv10,
    iflush,      test,      closeSend, closeRecv,
    closeListen, nullptr,   nullptr,   nullptr,
    finalize11,  nullptr};
#endif
}  // extern "C"
