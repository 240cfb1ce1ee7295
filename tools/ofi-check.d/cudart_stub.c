/* cudart_stub.c: a stand-in libcudart.so for hosts with no CUDA driver (tools/ofi-check).
 *
 * aws-ofi-nccl's CUDA build resolves ~30 driver functions through the CUDA runtime at init and
 * fails when there is no driver (cudaGetDriverEntryPointByVersion returns
 * cudaErrorInsufficientDriver without libcuda.so.1). Built with --enable-cudart-dynamic the plugin
 * dlopen()s "libcudart.so" instead of linking it statically; this library, found first through
 * LD_LIBRARY_PATH, answers that lookup with a driver that has no devices: cuDriverGetVersion
 * reports 13.0, every other function reports CUDA_ERROR_NO_DEVICE (no current context, no
 * GPUDirect RDMA, no DMA-BUF). That is enough for the plugin to run on host memory with a
 * provider that has no FI_HMEM (tcp, sockets). It is never used where a CUDA driver exists.
 *
 * Only the three runtime entry points the plugin loads are exported. */
#include <stddef.h>
#include <string.h>

#define STUB_EXPORT __attribute__((visibility("default")))

enum { kSuccess = 0, kErrorNoDevice = 100, kErrorNotFound = 500 };
enum { kQuerySuccess = 0, kQuerySymbolNotFound = 1 };
enum { kVersion = 13000 };

static int stub_driver_get_version(int* version) {
  if (!version) return 1; /* CUDA_ERROR_INVALID_VALUE */
  *version = kVersion;
  return kSuccess;
}

static int stub_get_error_string(int error, const char** out) {
  (void)error;
  if (out) *out = "no CUDA device (stand-in runtime of tools/ofi-check)";
  return kSuccess;
}

static int stub_get_error_name(int error, const char** out) {
  (void)error;
  if (out) *out = "CUDA_ERROR_NO_DEVICE";
  return kSuccess;
}

/* Every other driver function: no device. Called through pointers of the real prototypes; the
 * arguments are ignored and the result is an int in the return register on every ABI the plugin
 * is built for. */
static int stub_no_device(void) {
  return kErrorNoDevice;
}

STUB_EXPORT int cudaRuntimeGetVersion(int* version) {
  if (!version) return 1; /* cudaErrorInvalidValue */
  *version = kVersion;
  return kSuccess;
}

static int lookup(const char* symbol, void** fn, int* status) {
  if (!symbol || !fn) return 1;
  if (strcmp(symbol, "cuDriverGetVersion") == 0) {
    *fn = (void*)stub_driver_get_version;
  } else if (strcmp(symbol, "cuGetErrorString") == 0) {
    *fn = (void*)stub_get_error_string;
  } else if (strcmp(symbol, "cuGetErrorName") == 0) {
    *fn = (void*)stub_get_error_name;
  } else if (strncmp(symbol, "cu", 2) == 0) {
    *fn = (void*)stub_no_device;
  } else {
    *fn = NULL;
    if (status) *status = kQuerySymbolNotFound;
    return kErrorNotFound;
  }
  if (status) *status = kQuerySuccess;
  return kSuccess;
}

STUB_EXPORT int cudaGetDriverEntryPointByVersion(const char* symbol, void** fn,
                                                 unsigned int version, unsigned long long flags,
                                                 int* status) {
  (void)version;
  (void)flags;
  return lookup(symbol, fn, status);
}

STUB_EXPORT int cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                        int* status) {
  (void)flags;
  return lookup(symbol, fn, status);
}
