/* Braid: the NCCL 2.28 C API.
 *
 * This header is source- and ABI-compatible with NCCL 2.28.9: every name, enum value, macro and
 * struct layout matches, so programs built against NCCL link and run against Braid unchanged
 * (libnccl.so.2 is Braid's library under NCCL's soname). Braid-only extensions live in their own
 * headers under include/braid/ so that this file stays a pure NCCL interface.
 *
 * Differences from NVIDIA's header that do not change the API or ABI:
 *  - CUDA headers are not included. Braid builds and runs where CUDA is absent, and the API only
 *    needs the opaque cudaStream_t, which is declared below exactly as CUDA declares it. Code that
 *    relied on nccl.h to pull in cuda_runtime.h must include it itself.
 *  - The half, bfloat16 and fp8 headers are not included either: the API passes buffers as void*
 *    and names element types through ncclDataType_t, so no function takes or returns those types.
 *  - Functions without parameters are declared (void), which in C is compatible with NCCL's ()
 *    and in C++ is the same signature.
 */

#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h> /* INT_MIN for NCCL_CONFIG_UNDEF_INT */
#include <stddef.h> /* size_t, NULL */

/* cudaStream_t is an opaque pointer; NULL (0) selects the default stream, and for host buffers it
 * means "complete before returning". If CUDA's runtime types were seen first, use them; otherwise
 * repeat CUDA's own typedef so that including cuda_runtime.h later declares the identical type. */
#if !defined(CUDART_VERSION) && !defined(__DRIVER_TYPES_H__)
typedef struct CUstream_st* cudaStream_t;
#endif

/* Version of the NCCL API this header implements. */
#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22809
/* Versions up to 2.8 used a 4-digit encoding; later ones give the minor two digits. */
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

/// Communicator handle; the struct is private to the library.
typedef struct ncclComm* ncclComm_t;
/// Registered memory window handle; the struct is private to the library.
typedef struct ncclWindow_vidmem* ncclWindow_t;
/// Value of a communicator handle that refers to no communicator.
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/// Rendezvous token made by ncclGetUniqueId on one rank and copied verbatim to all others.
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/// Status returned by every call.
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

/* Markers for "not set by the user" in ncclConfig_t / ncclSimInfo_t. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* ncclCommWindowRegister flags. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01

#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t::CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags: plain shrink, or abort pending parent work first. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags: only 0 is defined. */
#define NCCL_REVOKE_DEFAULT 0x00

/// Communicator options. Start from NCCL_CONFIG_INITIALIZER and set only the fields you need;
/// size/magic/version identify the struct revision and must be left as initialized.
typedef struct ncclConfig_v22800 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

/// Initial value for every ncclConfig_t; a config without it is rejected.
#define NCCL_CONFIG_INITIALIZER                                                         \
  {                                                                                     \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,            \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,            \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,            \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,            \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                                   \
  }

/// Result of ncclGroupSimulateEnd: the estimated run time of the pending group.
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

/// Initial value for every ncclSimInfo_t; an uninitialized one is rejected.
#define NCCL_SIM_INFO_INITIALIZER                                                        \
  {                                                                                      \
    sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_UNDEF_FLOAT                                                                 \
  }

/* Every function has a twin with a 'p' prefix. Tools interpose the plain name and forward to the
 * 'p' one, which always reaches the library's implementation. */

/// Allocates memory suited to communication buffers (may round the size up).
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
/// Twin of ncclMemAlloc.
ncclResult_t pncclMemAlloc(void** ptr, size_t size);

/// Frees memory from ncclMemAlloc.
ncclResult_t ncclMemFree(void* ptr);
/// Twin of ncclMemFree.
ncclResult_t pncclMemFree(void* ptr);

/// Stores the library's NCCL_VERSION_CODE in *version.
ncclResult_t ncclGetVersion(int* version);
/// Twin of ncclGetVersion.
ncclResult_t pncclGetVersion(int* version);

/// Makes a fresh rendezvous id; call on one rank and send the id to every rank.
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
/// Twin of ncclGetUniqueId.
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/// Joins rank `rank` of `nranks` to the communicator named by commId, with options.
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
/// Twin of ncclCommInitRankConfig.
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);

/// Joins rank `rank` of `nranks` to the communicator named by commId. Blocks until all ranks
/// join, so each rank calls it from its own thread/process or inside a group.
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/// Twin of ncclCommInitRank.
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);

/// Creates all `ndev` ranks of one communicator in this process (comm[i] is rank i).
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
/// Twin of ncclCommInitAll.
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/// Completes all issued work and releases shared resources; destroy follows.
ncclResult_t ncclCommFinalize(ncclComm_t comm);
/// Twin of ncclCommFinalize.
ncclResult_t pncclCommFinalize(ncclComm_t comm);

/// Releases this rank's communicator.
ncclResult_t ncclCommDestroy(ncclComm_t comm);
/// Twin of ncclCommDestroy.
ncclResult_t pncclCommDestroy(ncclComm_t comm);

/// Cancels outstanding work and releases the communicator.
ncclResult_t ncclCommAbort(ncclComm_t comm);
/// Twin of ncclCommAbort.
ncclResult_t pncclCommAbort(ncclComm_t comm);

/// Stops in-flight work so the communicator can be destroyed, split or shrunk; flags must be 0.
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
/// Twin of ncclCommRevoke.
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/// Makes sub-communicators: ranks with equal color share one, ordered by key.
/// NCCL_SPLIT_NOCOLOR yields NULL; a NULL config inherits the parent's.
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
/// Twin of ncclCommSplit.
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);

/// Makes a communicator without the listed ranks; the rest are renumbered densely.
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
/// Twin of ncclCommShrink.
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/// Like ncclCommInitRankConfig, with nId ids (same list on every rank) to spread the rendezvous.
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
/// Twin of ncclCommInitRankScalable.
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);

/// Static text naming a result code.
const char* ncclGetErrorString(ncclResult_t result);
/// Twin of ncclGetErrorString.
const char* pncclGetErrorString(ncclResult_t result);

/// Text describing the most recent error.
const char* ncclGetLastError(ncclComm_t comm);
/// Twin of ncclGetLastError.
const char* pncclGetLastError(ncclComm_t comm);

#if defined(__GNUC__) || defined(__clang__)
#define NCCL_BRAID_DEPRECATED_(msg) __attribute__((deprecated(msg)))
#else
#define NCCL_BRAID_DEPRECATED_(msg)
#endif
/// Re-reads the logging environment variables. Not part of the supported API.
NCCL_BRAID_DEPRECATED_("ncclResetDebugInit is not part of the supported API")
void ncclResetDebugInit(void);
/// Twin of ncclResetDebugInit.
NCCL_BRAID_DEPRECATED_("pncclResetDebugInit is not part of the supported API")
void pncclResetDebugInit(void);
#undef NCCL_BRAID_DEPRECATED_

/// Reports an error raised in the background (ncclInProgress while non-blocking init runs).
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
/// Twin of ncclCommGetAsyncError.
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);

/// Number of ranks in the communicator.
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
/// Twin of ncclCommCount.
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);

/// CUDA device this rank was created on.
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
/// Twin of ncclCommCuDevice.
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);

/// This rank's index in the communicator.
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
/// Twin of ncclCommUserRank.
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/// Registers a buffer for repeated use; *handle is passed to ncclCommDeregister.
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
/// Twin of ncclCommRegister.
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);

/// Drops a registration made by ncclCommRegister.
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
/// Twin of ncclCommDeregister.
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);

/// Collectively registers a memory window (NCCL_WIN_* flags).
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);
/// Twin of ncclCommWindowRegister.
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags);

/// Collectively releases a window from ncclCommWindowRegister.
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
/// Twin of ncclCommWindowDeregister.
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);

/// Helper whose size fixes the width of ncclRedOp_t (see ncclMaxRedOp).
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
/// Reduction operator: a built-in one, or a handle from ncclRedOpCreatePreMulSum.
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  /// Count of built-in operators; created operators take values from here upward.
  ncclNumOps = 5,
  /// Largest operator value that keeps the enum as wide as the helper enum (int-sized).
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/// Element type of a buffer. Each name after the first on a line is an alias.
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/// Where the scalar of ncclRedOpCreatePreMulSum lives and when it is read.
typedef enum {
  /// In device-visible memory, read while each collective runs.
  ncclScalarDevice = 0,
  /// In host memory, read once before ncclRedOpCreatePreMulSum returns.
  ncclScalarHostImmediate = 1
} ncclScalarResidence_t;

/// Creates an operator that multiplies each input by *scalar, then sums; valid only with this
/// comm and datatype.
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
/// Twin of ncclRedOpCreatePreMulSum.
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);

/// Frees an operator from ncclRedOpCreatePreMulSum once no call using it is pending.
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
/// Twin of ncclRedOpDestroy.
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* Collectives and point-to-point calls. Every rank of the communicator makes the matching call.
 * They return once the work is queued on `stream`. Unless noted, sendbuff == recvbuff works in
 * place. */

/// Reduces count elements from every rank into recvbuff on root.
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclReduce.
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream);

/// Older in-place broadcast of buff from root.
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
/// Twin of ncclBcast.
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);

/// Copies count elements of root's sendbuff to every rank's recvbuff.
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclBroadcast.
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream);

/// Reduces count elements across ranks; every rank receives the result.
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
/// Twin of ncclAllReduce.
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);

/// Reduces nranks*recvcount elements; rank i receives block i. In place when
/// recvbuff == sendbuff + rank*recvcount.
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
/// Twin of ncclReduceScatter.
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream);

/// Concatenates every rank's sendcount elements, in rank order, on every rank. In place when
/// sendbuff == recvbuff + rank*sendcount.
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclAllGather.
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/// Block j of sendbuff (count elements) goes to rank j; block i of recvbuff comes from rank i.
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclAlltoAll.
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/// Collects count elements from each rank into block i of root's recvbuff. In place when
/// sendbuff == recvbuff + root*count.
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclGather.
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/// Sends block i (count elements) of root's sendbuff to rank i. In place when
/// recvbuff == sendbuff + root*count.
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclScatter.
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/// Sends count elements to rank peer, which posts a matching ncclRecv. Put concurrent
/// sends/receives in one group so they can progress together.
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclSend.
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);

/// Receives count elements from rank peer, which posts a matching ncclSend.
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
/// Twin of ncclRecv.
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);

/* Groups: calls between ncclGroupStart and ncclGroupEnd are deferred and issued together, which
 * lets one thread drive several ranks and lets sends and receives progress concurrently. */

/// Opens a group (groups nest; the outermost end issues the work).
ncclResult_t ncclGroupStart(void);
/// Twin of ncclGroupStart.
ncclResult_t pncclGroupStart(void);

/// Closes a group and issues everything queued since the outermost ncclGroupStart.
ncclResult_t ncclGroupEnd(void);
/// Twin of ncclGroupEnd.
ncclResult_t pncclGroupEnd(void);

/// Closes a group without running it and reports the estimated time in *simInfo.
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
/// Twin of ncclGroupSimulateEnd.
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
