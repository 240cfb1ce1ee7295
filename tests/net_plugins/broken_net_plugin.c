/* Net plugins that are broken in one way each (one define per library, see CMakeLists.txt): the
 * loader must say which file, which symbol or version, which call, and fall back to the next
 * network, or fail the init when the user asked for this network by name. */
#include "transports/net/net_plugin_api.h"

#define EXPORT __attribute__((visibility("default")))

static ncclResult_t stubInit8(ncclDebugLogger_t logger) {
  (void)logger;
#ifdef BROKEN_INIT_FAILS
  return ncclSystemError;
#else
  return ncclSuccess;
#endif
}
static ncclResult_t stubInit10(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)prof;
  return stubInit8(logger);
}
static ncclResult_t stubInit11(void** ctx, uint64_t commId, ncclNetCommConfig_v11_t* config,
                               ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)ctx, (void)commId, (void)config, (void)prof;
  return stubInit8(logger);
}
static ncclResult_t stubDevices(int* ndev) {
#ifdef BROKEN_NO_DEVICES
  *ndev = 0;
#else
  *ndev = 1;
#endif
  return ncclSuccess;
}
static ncclResult_t unused(void) {
  return ncclInternalError;
}
#define STUB(type) ((type)(void*)unused)

#if defined(BROKEN_NO_SYMBOL)
EXPORT int notANetPlugin = 1;
#elif defined(BROKEN_OLD_VERSION)
/* Only the symbol's presence matters: Braid refuses versions before 8. */
EXPORT char ncclNetPlugin_v7[256] = "Broken";
#elif defined(BROKEN_NULL_FUNCTION) || defined(BROKEN_INIT_FAILS)
EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = "Broken",
    .init = stubInit10,
    .devices = stubDevices,
    .getProperties = STUB(ncclResult_t(*)(int, ncclNetProperties_v10_t*)),
    .listen = STUB(ncclResult_t(*)(int, void*, void**)),
    .connect = STUB(
        ncclResult_t(*)(int, ncclNetCommConfig_v10_t*, void*, void**, ncclNetDeviceHandle_v10_t**)),
    .accept = STUB(ncclResult_t(*)(void*, void**, ncclNetDeviceHandle_v10_t**)),
    .regMr = STUB(ncclResult_t(*)(void*, void*, size_t, int, void**)),
    .deregMr = STUB(ncclResult_t(*)(void*, void*)),
#ifndef BROKEN_NULL_FUNCTION
    .isend = STUB(ncclResult_t(*)(void*, void*, size_t, int, void*, void*, void**)),
#endif
    .irecv = STUB(ncclResult_t(*)(void*, int, void**, size_t*, int*, void**, void**, void**)),
    .test = STUB(ncclResult_t(*)(void*, int*, int*)),
    .closeSend = STUB(ncclResult_t(*)(void*)),
    .closeRecv = STUB(ncclResult_t(*)(void*)),
    .closeListen = STUB(ncclResult_t(*)(void*)),
};
#elif defined(BROKEN_NO_DEVICES)
EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "Broken",
    .init = stubInit11,
    .devices = stubDevices,
    .getProperties = STUB(ncclResult_t(*)(int, ncclNetProperties_v11_t*)),
    .listen = STUB(ncclResult_t(*)(void*, int, void*, void**)),
    .connect = STUB(ncclResult_t(*)(void*, int, void*, void**, ncclNetDeviceHandle_v11_t**)),
    .accept = STUB(ncclResult_t(*)(void*, void**, ncclNetDeviceHandle_v11_t**)),
    .regMr = STUB(ncclResult_t(*)(void*, void*, size_t, int, void**)),
    .deregMr = STUB(ncclResult_t(*)(void*, void*)),
    .isend = STUB(ncclResult_t(*)(void*, void*, size_t, int, void*, void*, void**)),
    .irecv = STUB(ncclResult_t(*)(void*, int, void**, size_t*, int*, void**, void**, void**)),
    .test = STUB(ncclResult_t(*)(void*, int*, int*)),
    .closeSend = STUB(ncclResult_t(*)(void*)),
    .closeRecv = STUB(ncclResult_t(*)(void*)),
    .closeListen = STUB(ncclResult_t(*)(void*)),
};
#else
#error "define one BROKEN_* kind"
#endif
