/*
 * InfiniCCL: one NCCL-like collective communication API over MPI and native
 * accelerator collective libraries.
 *
 * Source-compatible with the upstream InfiniCCL header: same names, argument
 * order and enum values. Extensions are marked as such.
 *
 * Semantics shared by every collective:
 *  - Counts are size_t and may exceed INT_MAX elements.
 *  - count == 0 succeeds and does nothing (no communication).
 *  - In-place operation follows NCCL's layout: AllReduce, Broadcast, Reduce,
 *    AllToAll: sendbuff == recvbuff; AllGather: sendbuff == recvbuff +
 *    rank*count; Gather (at the root): sendbuff == recvbuff + root*count;
 *    Scatter (at the root): recvbuff == sendbuff + root*count;
 *    ReduceScatter: recvbuff == sendbuff + rank*recvcount. Any other overlap
 *    of send and receive buffers is rejected with infinicclInvalidArgument.
 *  - infinicclAvg is Sum divided by the number of ranks: exact division for
 *    floating types, C integer division (truncation toward zero) for integer
 *    types. Float16/BFloat16 reductions accumulate in float and round to
 *    nearest even on every combination step.
 *  - On host buffers a call is blocking: when it returns, recvbuff holds the
 *    result. `stream` is ignored for host buffers.
 *  - On device buffers staged through host memory (an MPI that cannot read
 *    device memory), the device-to-host copies are issued on `stream`, so
 *    they run after the work already queued there (the kernels that produced
 *    sendbuff); the call returns when recvbuff holds the result, which later
 *    work on `stream` sees. stream NULL is the runtime's default stream.
 *    All ranks of one call must pass the same kind of memory (all host or
 *    all device): large staged operations run in chunks, identically on
 *    every device-memory rank.
 *  - On device buffers of a communicator with a native CCL (NCCL on NVIDIA,
 *    MCCL on MetaX), the call is enqueued on `stream` and returns without
 *    waiting, as in NCCL: recvbuff holds the result for work queued after it
 *    on `stream`. Calls the CCL cannot take with these semantics (reductions
 *    of Int16/UInt16, integer Avg, in-place AllToAll) take the MPI path
 *    instead. INFINICCL_BACKEND=auto|mpi|ccl overrides the choice.
 *  - Errors are returned, never aborted on (unless INFINICCL_ABORT_ON_ERROR=1);
 *    infinicclGetLastError() gives the message of the last failed call.
 *  - Send/Recv outside a group block until matched, as MPI_Send/MPI_Recv do;
 *    inside a group they complete at infinicclGroupEnd (see there).
 */
#ifndef INFINICCL_INFINICCL_H_
#define INFINICCL_INFINICCL_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INFINICCL_MAJOR 0
#define INFINICCL_MINOR 1
#define INFINICCL_PATCH 0
/* Same encoding as NCCL_VERSION_CODE: major*10000 + minor*100 + patch. */
#define INFINICCL_VERSION_CODE \
  (INFINICCL_MAJOR * 10000 + INFINICCL_MINOR * 100 + INFINICCL_PATCH)

#define INFINICCL_UNIQUE_ID_BYTES 128

/* The library is built with hidden visibility; only the API is exported. */
#if defined(__GNUC__) || defined(__clang__)
#define INFINICCL_API __attribute__((visibility("default")))
#else
#define INFINICCL_API
#endif

typedef enum {
  infinicclSuccess = 0,
  infinicclUnhandledError = 1,
  infinicclSystemError = 2,
  infinicclInternalError = 3,
  infinicclInvalidArgument = 4,
  infinicclInvalidUsage = 5,
  infinicclRemoteError = 6,
  infinicclInProgress = 7,
  infinicclNotSupported = 8,
  infinicclNumResults = 9
} infinicclResult_t;

typedef enum {
  infinicclChar = 0,
  infinicclInt8 = 0,
  infinicclInt16 = 1,
  infinicclInt = 2,
  infinicclInt32 = 2,
  infinicclInt64 = 3,
  infinicclUInt8 = 4,
  infinicclUInt16 = 5,
  infinicclUInt32 = 6,
  infinicclUInt64 = 7,
  infinicclHalf = 8,
  infinicclFloat16 = 8,
  infinicclBFloat16 = 9,
  infinicclFloat = 10,
  infinicclFloat32 = 10,
  infinicclDouble = 11,
  infinicclFloat64 = 11,
  infinicclNumTypes = 12
} infinicclDataType_t;

typedef enum {
  infinicclSum = 0,
  infinicclProd = 1,
  infinicclMax = 2,
  infinicclMin = 3,
  infinicclAvg = 4,
  infinicclNumOps
} infinicclRedOp_t;

typedef void *infinicclComm_t;

typedef struct {
  char internal[INFINICCL_UNIQUE_ID_BYTES];
} infinicclUniqueId;

/* Initialisation. Init starts MPI (MPI_Init_thread) only if it is not yet
 * initialised; Finalize finalises MPI only if Init started it. Every other
 * call before Init or after Finalize returns infinicclInvalidUsage, except
 * the error/version queries and the NCCL-style bootstrap (GetUniqueId,
 * CommInitRank), which needs no Init. */
INFINICCL_API infinicclResult_t infinicclInit(int *argc, char ***argv);
INFINICCL_API infinicclResult_t infinicclFinalize(void);

/* Rank and size in the world (MPI_COMM_WORLD), as upstream. */
INFINICCL_API infinicclResult_t infinicclGetRank(int *rank);
INFINICCL_API infinicclResult_t infinicclGetSize(int *size);

/* Communicators. CommInitAll duplicates MPI_COMM_WORLD and binds each rank to
 * a device, with upstream's meaning of ndev/devlist: devlist == NULL (any
 * ndev, e.g. upstream's CommInitAll(&comm, size, NULL)) binds the local
 * rank's own device (modulo the count, with a WARN, when there are fewer);
 * with a devlist, devlist[local_rank] when local_rank < ndev, else the local
 * rank's own. A negative ndev or devlist entry is InvalidArgument. When every rank is bound to its own device of a kind with
 * a native CCL, CommInitAll also makes the CCL communicator (rank 0 makes
 * the id, MPI broadcasts it); otherwise device buffers go to MPI.
 * GetUniqueId/CommInitRank are NCCL's bootstrap, without MPI and without
 * Init (for launchers that exchange the id themselves): GetUniqueId wraps
 * the CCL's unique id; CommInitRank makes a communicator of the CCL only, on
 * the calling thread's current device, whose device collectives go to the
 * CCL; host buffers on it return infinicclNotSupported (they are not staged
 * through the device). Without a CCL built, or without a device of its kind,
 * both return infinicclNotSupported with the reason. */
INFINICCL_API infinicclResult_t infinicclGetUniqueId(infinicclUniqueId *id);
INFINICCL_API infinicclResult_t infinicclCommInitAll(infinicclComm_t *comm, int ndev,
                                       const int *devlist);
INFINICCL_API infinicclResult_t infinicclCommInitRank(infinicclComm_t *comm, int nranks,
                                        infinicclUniqueId id, int rank);
/* Extension: a communicator over the caller's own MPI communicator, given as
 * its Fortran handle (MPI_Comm_c2f(c) in C, comm.py2f() in mpi4py) so this
 * header needs no mpi.h. Collective over that communicator. It is duplicated
 * (the caller may free its own afterwards) and gets the device binding and
 * native CCL of CommInitAll. A handle that is not a valid intra-communicator
 * (MPI_COMM_NULL, an inter-communicator) returns infinicclInvalidArgument. */
INFINICCL_API infinicclResult_t infinicclCommInitMpi(infinicclComm_t *comm, long mpi_comm_fint);
/* Extension: a communicator among `nranks` ranks of `parent`, listed in
 * ranks[] (parent ranks, in the order of the new communicator: ranks[i]
 * becomes rank i). Collective over the listed ranks only; the others do not
 * call it (MPI_Comm_create_group; torch.distributed's new_group creates a
 * group on its members alone). Each rank keeps the device of its binding in
 * `parent`. A rank not listed, a rank listed twice or out of range, or
 * nranks < 1 returns infinicclInvalidArgument; a parent without MPI
 * (infinicclCommInitRank) infinicclNotSupported. */
INFINICCL_API infinicclResult_t infinicclCommInitRanks(infinicclComm_t parent, int nranks,
                                                       const int *ranks,
                                                       infinicclComm_t *newcomm);
INFINICCL_API infinicclResult_t infinicclCommDestroy(infinicclComm_t comm);

/* Collectives. */
INFINICCL_API infinicclResult_t infinicclAllReduce(const void *sendbuff, void *recvbuff,
                                     size_t count, infinicclDataType_t datatype,
                                     infinicclRedOp_t op, infinicclComm_t comm,
                                     void *stream);

INFINICCL_API infinicclResult_t infinicclBroadcast(const void *sendbuff, void *recvbuff,
                                     size_t count, infinicclDataType_t datatype,
                                     int root, infinicclComm_t comm,
                                     void *stream);

INFINICCL_API infinicclResult_t infinicclBcast(void *buff, size_t count,
                                 infinicclDataType_t datatype, int root,
                                 infinicclComm_t comm, void *stream);

INFINICCL_API infinicclResult_t infinicclReduce(const void *sendbuff, void *recvbuff,
                                  size_t count, infinicclDataType_t datatype,
                                  infinicclRedOp_t op, int root,
                                  infinicclComm_t comm, void *stream);

/* count is per rank: recvbuff holds nranks*count elements. */
INFINICCL_API infinicclResult_t infinicclAllGather(const void *sendbuff, void *recvbuff,
                                     size_t count, infinicclDataType_t datatype,
                                     infinicclComm_t comm, void *stream);

/* count is per rank: recvbuff (at the root) holds nranks*count elements. */
INFINICCL_API infinicclResult_t infinicclGather(const void *sendbuff, void *recvbuff,
                                  size_t count, infinicclDataType_t datatype,
                                  int root, infinicclComm_t comm, void *stream);

/* count is per rank: sendbuff (at the root) holds nranks*count elements. */
INFINICCL_API infinicclResult_t infinicclScatter(const void *sendbuff, void *recvbuff,
                                   size_t count, infinicclDataType_t datatype,
                                   int root, infinicclComm_t comm,
                                   void *stream);

/* sendbuff holds nranks*recvcount elements; rank r receives block r. */
INFINICCL_API infinicclResult_t infinicclReduceScatter(const void *sendbuff, void *recvbuff,
                                         size_t recvcount,
                                         infinicclDataType_t datatype,
                                         infinicclRedOp_t op,
                                         infinicclComm_t comm, void *stream);

/* count is per peer: both buffers hold nranks*count elements. */
INFINICCL_API infinicclResult_t infinicclAllToAll(const void *sendbuff, void *recvbuff,
                                    size_t count, infinicclDataType_t datatype,
                                    infinicclComm_t comm, void *stream);

/* Point to point. Outside a group peer must differ from the caller's rank;
 * inside a group it may equal it. */
INFINICCL_API infinicclResult_t infinicclSend(const void *sendbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream);

INFINICCL_API infinicclResult_t infinicclRecv(void *recvbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream);

/* Group calls (extension: not in the upstream header), with NCCL's
 * semantics (ncclGroupStart/ncclGroupEnd).
 *  - The group state belongs to the calling thread. Groups nest: only the
 *    outermost infinicclGroupEnd completes the group. They need no Init.
 *  - Send and Recv inside a group are started (nonblocking) and return at
 *    once; the outermost GroupEnd returns when all of them have completed
 *    (recvbuff holds the data, device buffers included). So every rank may
 *    send before it receives (a ring, an all-to-all by Send/Recv pairs) with
 *    messages of any size; without a group such a ring deadlocks once the
 *    messages exceed MPI's eager limit. A buffer of a pending Send or Recv
 *    must not be touched before GroupEnd returns.
 *  - Collectives inside a group run when called, in call order (all ranks
 *    must call them in the same order, as always); pending Sends and Recvs of
 *    the group progress meanwhile. On a native CCL the group maps to the
 *    CCL's own group calls (operations are enqueued at GroupEnd).
 *  - A call that fails inside a group (bad argument, say) returns its error
 *    and is not added to the group; the group stays usable. As in NCCL, the
 *    outermost GroupEnd then returns that error too, after completing every
 *    operation that was added (unlike NCCL, which drops them: MPI cannot
 *    withdraw posted operations, and peers waiting on them would hang).
 *    Errors while completing (MPI_ERR_TRUNCATE on a shorter Recv, say) are
 *    returned by GroupEnd; infinicclGetLastError(NULL) on the thread and
 *    infinicclGetLastError(comm) on each communicator of the group give the
 *    message.
 *  - infinicclGroupEnd without infinicclGroupStart returns
 *    infinicclInvalidUsage. infinicclCommDestroy of a communicator used in a
 *    group not yet ended, and infinicclFinalize inside a group, return
 *    infinicclInvalidUsage. */
INFINICCL_API infinicclResult_t infinicclGroupStart(void);
INFINICCL_API infinicclResult_t infinicclGroupEnd(void);

/* ---- Extensions (not in the upstream header) ---- */

/* A static, human-readable name for a result code. Never NULL. */
INFINICCL_API const char *infinicclGetErrorString(infinicclResult_t result);

/* The message of the last failed call on `comm`, or of the last failed call
 * on the calling thread when comm is NULL. Empty string when there was none;
 * "unknown communicator" for a handle never issued; for a destroyed or
 * aborted one, a message saying so.
 * The pointer stays valid until the next failing call on the same comm or
 * thread. Never NULL. */
INFINICCL_API const char *infinicclGetLastError(infinicclComm_t comm);

/* INFINICCL_VERSION_CODE of the library actually loaded. Works before Init. */
INFINICCL_API infinicclResult_t infinicclGetVersion(int *version);

/* A new communicator from the ranks of `comm` that pass the same color
 * (NCCL's ncclCommSplit; collective over `comm`: every rank must call it).
 * Ranks are ordered by key, then by their rank in `comm`. A negative color
 * (INFINICCL_SPLIT_NOCOLOR) still takes part and sets *newcomm to NULL. The
 * new communicator keeps the device binding of `comm` and shares the
 * process's staging memory; it is independent of `comm` afterwards (either
 * may be destroyed first). A rank passing newcomm == NULL takes part without
 * a color and returns infinicclInvalidArgument. */
#define INFINICCL_SPLIT_NOCOLOR (-1)
INFINICCL_API infinicclResult_t infinicclCommSplit(infinicclComm_t comm, int color, int key,
                                                   infinicclComm_t *newcomm);

/* Gives up `comm` without talking to other ranks: usable after an error, or
 * from another thread while a call on `comm` is blocked. Later calls on the
 * handle return infinicclInvalidUsage saying it was aborted. The library's
 * resources for it are freed; its MPI communicator is not (MPI_Comm_free and
 * MPI_Comm_disconnect are collective) and goes at MPI_Finalize.
 * A call still running on `comm` cannot be cancelled in MPI: CommAbort waits
 * up to one second for it to return, and if it has not, logs which call it
 * is and ends the job with MPI_Abort on the communicator (where NCCL's abort
 * would make the blocked call return an error). */
INFINICCL_API infinicclResult_t infinicclCommAbort(infinicclComm_t comm);

/* Whether work already handed to the device for `comm` has failed since
 * (NCCL's ncclCommGetAsyncError; an extension): sets *asyncError to
 * infinicclSuccess, or to the error, whose message infinicclGetLastError(comm)
 * then gives. Never blocks and talks to no other rank, so a monitoring
 * thread may poll it while `comm` is in use and call infinicclCommAbort on an
 * error. Device work that can fail after its call returned: the native
 * CCL's, and on MPI the calls on device buffers queued to the
 * communicator's progress engine (INFINICCL_ASYNC, on by default), whose
 * failure every later call on `comm` also returns. Host-buffer calls on MPI
 * have finished (or failed) when they return. */
INFINICCL_API infinicclResult_t infinicclCommGetAsyncError(infinicclComm_t comm,
                                                           infinicclResult_t *asyncError);

/* Number of ranks in, and the caller's rank within, a communicator. */
INFINICCL_API infinicclResult_t infinicclCommCount(infinicclComm_t comm, int *count);
INFINICCL_API infinicclResult_t infinicclCommUserRank(infinicclComm_t comm, int *rank);

/* Host staging of device buffers (extensions). Counters are process-wide and
 * cumulative since infinicclInit, except bytes_held (now). */
typedef struct {
  unsigned long long allocations;      /* staging buffers allocated */
  unsigned long long frees;            /* staging buffers freed */
  unsigned long long bytes_held;       /* host staging bytes held now (idle + in use) */
  unsigned long long peak_bytes_held;  /* high-water mark of bytes_held */
  int pinned;                          /* 1 if the buffers held now are all pinned */
  unsigned long long d2h_copies, d2h_bytes;
  unsigned long long h2d_copies, h2d_bytes;
  unsigned long long staged_calls;     /* device calls staged through host memory */
  unsigned long long pipelined_calls;  /* of those, split into several chunks */
  unsigned long long direct_calls;     /* device calls given to MPI directly */
} infinicclStagingStats;

/* Between Init and Finalize only (infinicclInvalidUsage otherwise). */
INFINICCL_API infinicclResult_t infinicclGetStagingStats(infinicclStagingStats *stats);
/* Frees all idle cached staging memory now. */
INFINICCL_API infinicclResult_t infinicclMemTrim(void);

#ifdef __cplusplus
}
#endif

#endif /* INFINICCL_INFINICCL_H_ */
