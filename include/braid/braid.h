/* Braid's extensions to the NCCL API (C and C++). */
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Returns once every rank of `comm` has called it (NCCL has no barrier; this is the
/// 1-element allreduce users write by hand, with Braid's error reporting). Collective.
ncclResult_t braidBarrier(ncclComm_t comm);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // BRAID_BRAID_H_
