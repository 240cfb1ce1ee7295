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

/* Host streams: in-order asynchronous queues for host-memory work, the CPU counterpart of a
 * CUDA stream. Pass one, cast with braidStreamAsCuda(), as the `stream` argument of any
 * collective or point-to-point call (or of every call of a group): the call validates its
 * arguments, queues the work and returns ncclSuccess at once; the stream's own thread runs the
 * queued work in order. Buffers must stay valid and untouched until the work has run.
 * The NULL stream keeps NCCL's host behaviour: the call completes before it returns.
 * A failure of queued work is sticky: Query and Synchronize report it (with its text through
 * ncclGetLastError) from then on, and later work on the stream is skipped. */
typedef struct braidHostStream* braidStream_t;
#define braidStreamAsCuda(s) ((cudaStream_t)(s))

/// Creates a host stream. Its thread starts with the first queued work.
ncclResult_t braidStreamCreate(braidStream_t* stream);
/// Waits for the queued work, then frees the stream. Returns the stream's sticky error, if any.
ncclResult_t braidStreamDestroy(braidStream_t stream);
/// ncclSuccess when everything queued has run, ncclInProgress while work is pending, or the
/// stream's sticky error.
ncclResult_t braidStreamQuery(braidStream_t stream);
/// Blocks until everything queued has run; returns ncclSuccess or the stream's sticky error.
ncclResult_t braidStreamSynchronize(braidStream_t stream);
/// Queues fn(arg) on the stream, after the work queued before it (like cudaLaunchHostFunc).
/// A non-zero return marks the stream failed with ncclInternalError.
ncclResult_t braidStreamLaunchHostFunc(braidStream_t stream, int (*fn)(void* arg), void* arg);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // BRAID_BRAID_H_
