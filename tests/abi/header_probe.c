/* Compile probe for Braid's nccl.h: built as C (c99/c11/c17) and as C++ (-x c++, 11 to 20) with
 * -Wall -Wextra -pedantic -Werror. PROBE_CUDA_FIRST / PROBE_CUDA_AFTER include CUDA's runtime
 * header before or after nccl.h, the two orders real applications use. */
#ifdef PROBE_CUDA_FIRST
#include <cuda_runtime.h>
#endif
#include <nccl.h>
#ifdef PROBE_CUDA_AFTER
#include <cuda_runtime.h>
#endif

#ifndef NCCL_H_
#error "nccl.h must define the NCCL_H_ include guard"
#endif
/* NVIDIA's header includes cuda_fp16.h; Braid's must not, so this also proves which one we got. */
#ifdef __CUDA_FP16_H__
#error "this probe must compile Braid's nccl.h, which includes no CUDA header"
#endif
#if NCCL_VERSION_CODE != 22809 || \
    NCCL_VERSION_CODE != NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)
#error "version macros must describe NCCL 2.28.9 and be usable by the preprocessor"
#endif

/* Exercises initializers, handle types and the stream type the way applications do. */
int probeUse(void);
int probeUse(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t simInfo = NCCL_SIM_INFO_INITIALIZER;
  ncclUniqueId id;
  ncclComm_t comm = NCCL_COMM_NULL;
  ncclWindow_t window = NULL;
  struct CUstream_st* rawStream = NULL;
  cudaStream_t stream = rawStream;
  ncclResult_t (*allReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = ncclAllReduce;
  ncclResult_t (*groupStart)(void) = pncclGroupStart;
  int sizes = (int)sizeof(id.internal) + (int)sizeof(config) + (int)sizeof(simInfo);
  config.blocking = 0;
  config.commName = "probe";
  return sizes + (comm == NULL) + (window == NULL) + (stream == NULL) + (allReduce != NULL) +
         (groupStart != NULL) + (int)ncclMaxRedOp + (int)ncclFloat8e5m2 + (int)ncclScalarDevice;
}
