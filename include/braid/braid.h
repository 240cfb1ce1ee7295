/* Braid's extensions to the NCCL API (C and C++). */
#ifndef BRAID_BRAID_H_
#define BRAID_BRAID_H_

#include <stdint.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Returns once every rank of `comm` has called it (NCCL has no barrier; this is the
/// 1-element allreduce users write by hand, with Braid's error reporting). Collective.
ncclResult_t braidBarrier(ncclComm_t comm);

/// Like ncclGetUniqueId, but always a fresh id whose bootstrap root this process hosts on a free
/// port: NCCL_COMM_ID and MASTER_ADDR/MASTER_PORT are ignored. For programs that share the id
/// themselves (a framework's key-value store) while MASTER_PORT belongs to that framework.
ncclResult_t braidGetFreshUniqueId(ncclUniqueId* uniqueId);

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

/* Diagnosis (docs/diagnosis.md). Every wait of a communicator ends after BRAID_TIMEOUT_S seconds
 * (default 300); a timed-out call returns ncclRemoteError (NCCL has no timeout code), its
 * ncclGetLastError text names the peer the rank waited for and the sequence numbers it knows,
 * and the communicator is marked failed: from then on every call on it returns the same error
 * except ncclCommAbort, ncclCommDestroy and the queries (ncclCommGetAsyncError, Count, UserRank).
 */

/// Overrides BRAID_TIMEOUT_S for the later operations of `comm` (collectives, point-to-point,
/// barriers). `seconds` must be finite and >= 0; 0 means no deadline. Call it between operations,
/// not while another thread has a call in progress on `comm`. Bootstrap exchanges (ncclCommSplit)
/// keep the timeout the communicator was created with.
ncclResult_t braidCommSetTimeout(ncclComm_t comm, double seconds);
/// The timeout in force for `comm`'s operations, in seconds (0: none).
ncclResult_t braidCommGetTimeout(ncclComm_t comm, double* seconds);
/// Writes `comm`'s flight recorder (its last BRAID_FLIGHT_RECORDER_SIZE operations and the last
/// sequence number heard from each peer) to the log (NCCL_DEBUG_FILE or stderr), whatever the
/// NCCL_DEBUG level. Safe to call while another thread is blocked in a call on `comm`.
ncclResult_t braidCommDumpFlightRecorder(ncclComm_t comm);

/* Tuning (docs/performance.md, "Tuner"). */

/// Copies the name of the algorithm `comm`'s last collective ran with ("Ring", "Tree", ...;
/// "" before the first) into `name`, truncated to `nameBytes` - 1 characters and terminated.
/// For a collective queued on a stream or a non-blocking communicator, the name is set when it
/// starts to run.
ncclResult_t braidCommLastAlgorithm(ncclComm_t comm, char* name, size_t nameBytes);

/* Traffic (docs/scale.md): what this rank's schedules sent through its connections, by where the
 * receiving rank runs. Ranks count as on other hosts when their host identity differs (hostname,
 * boot id, network namespace; NCCL_HOSTID overrides it). */
typedef struct {
  uint64_t bytesToOtherHosts; /* payload sent to ranks on other hosts */
  uint64_t bytesWithinHost;   /* payload sent to ranks on this host through connections (in-place
                                 reads of a peer's registered memory are not counted) */
} braidTraffic_t;

/// The payload `comm` has sent since it was created (counted as it is handed to a connection).
/// Call it between operations, not while another thread has a call in progress on `comm`.
ncclResult_t braidCommGetTraffic(ncclComm_t comm, braidTraffic_t* traffic);

/// *arrived = 1 when data from `peer` has reached this rank and no receive has taken it yet (a
/// send has begun that this rank has not received); 0 otherwise, also where no connection to
/// `peer` exists yet. MPI_Iprobe's question for one peer, without the message's size: what a
/// receive from any source asks of each candidate before it receives. Call it between
/// operations, not while another thread has a call in progress on `comm`.
ncclResult_t braidCommProbe(ncclComm_t comm, int peer, int* arrived);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // BRAID_BRAID_H_
