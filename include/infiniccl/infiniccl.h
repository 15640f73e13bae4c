/**
 * @file infiniccl.h
 * @brief InfiniCCL: one NCCL-like collective communication API over MPI and native
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
 *  - infinicclBand, infinicclBor and infinicclBxor (extensions) combine the
 *    bits of the integer types (Int8..UInt64, signed ones as two's
 *    complement); with a floating type a reduction is rejected with
 *    infinicclInvalidArgument.
 *  - On host buffers a call is blocking: when it returns, recvbuff holds the
 *    result. `stream` is ignored for host buffers.
 *  - On device buffers through MPI (staged through host memory, or given to
 *    a GPU-aware MPI directly, or two-level), the call is queued to the
 *    communicator's progress engine and returns at once, ordered on
 *    `stream` as in NCCL: it runs after the work already queued there (the
 *    kernels that produced sendbuff), and work queued on `stream` after the
 *    call sees recvbuff's result. The buffers must stay valid and unmodified
 *    until `stream` has reached the call; synchronize `stream` before
 *    reading recvbuff on the host. Where the runtime has no device-side
 *    wait, with INFINICCL_ASYNC=0, or with MPI below MPI_THREAD_MULTIPLE,
 *    the call returns when recvbuff holds the result instead
 *    (infiniccl-info says which). stream NULL is the runtime's default
 *    stream. All ranks of one call must pass the same kind of memory (all
 *    host or all device): large staged operations run in chunks,
 *    identically on every device-memory rank.
 *  - On device buffers of a communicator with a native CCL (NCCL on NVIDIA,
 *    RCCL on AMD and Hygon, MCCL on MetaX, HCCL on Ascend, CNCL on
 *    Cambricon), the call is enqueued on `stream` and returns without
 *    waiting, as in NCCL: recvbuff holds the result for work queued after it
 *    on `stream`. Calls the CCL cannot take with these semantics (reductions
 *    of Int16/UInt16, integer Avg, bitwise ops, in-place AllToAll) take the
 *    MPI path instead. INFINICCL_BACKEND=auto|mpi|ccl overrides the choice.
 *  - Errors are returned, never aborted on (unless INFINICCL_ABORT_ON_ERROR=1);
 *    infinicclGetLastError() gives the message of the last failed call.
 *  - Send/Recv outside a group block until matched, as MPI_Send/MPI_Recv do;
 *    inside a group they complete at infinicclGroupEnd (see there).
 *    Messages from one rank to another match in the order they were sent;
 *    the extensions infinicclSendTagged/infinicclRecvTagged add a tag and a
 *    receive from any source (INFINICCL_ANY_SOURCE).
 */
#ifndef INFINICCL_INFINICCL_H_
#define INFINICCL_INFINICCL_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Major version (CMake's project(VERSION), checked at configure time). */
#define INFINICCL_MAJOR 0
/** Minor version. */
#define INFINICCL_MINOR 1
/** Patch version. */
#define INFINICCL_PATCH 0
/** Same encoding as NCCL_VERSION_CODE: major*10000 + minor*100 + patch. */
#define INFINICCL_VERSION_CODE \
  (INFINICCL_MAJOR * 10000 + INFINICCL_MINOR * 100 + INFINICCL_PATCH)

/** Size of infinicclUniqueId in bytes (NCCL's ncclUniqueId fits). */
#define INFINICCL_UNIQUE_ID_BYTES 128

/** @cond INTERNAL */
/* The library is built with hidden visibility; only the API is exported. */
#if defined(__GNUC__) || defined(__clang__)
#define INFINICCL_API __attribute__((visibility("default")))
#else
#define INFINICCL_API
#endif
/** @endcond */

/** Result code of every call; infinicclGetLastError() gives the message. */
typedef enum {
  infinicclSuccess = 0,          /**< The call succeeded. */
  infinicclUnhandledError = 1,   /**< An error of a lower layer with no better code. */
  infinicclSystemError = 2,      /**< MPI, the device runtime or the OS failed. */
  infinicclInternalError = 3,    /**< A bug in InfiniCCL. */
  infinicclInvalidArgument = 4,  /**< A bad argument; the message names it. */
  infinicclInvalidUsage = 5,     /**< A call out of order (before Init, on a destroyed comm, ...). */
  infinicclRemoteError = 6,      /**< Another rank disagreed or failed (mismatched counts, say). */
  infinicclInProgress = 7,       /**< A CCL operation still in progress (the CCL's own code, passed on). */
  infinicclNotSupported = 8,     /**< Not possible with this build, device or communicator; the message says why. */
  infinicclNumResults = 9        /**< The number of result codes. */
} infinicclResult_t;

/** Element type of a buffer (upstream's values; aliases share a value). */
typedef enum {
  infinicclChar = 0,       /**< signed char (same as infinicclInt8). */
  infinicclInt8 = 0,       /**< int8_t. */
  infinicclInt16 = 1,      /**< int16_t. */
  infinicclInt = 2,        /**< int (same as infinicclInt32). */
  infinicclInt32 = 2,      /**< int32_t. */
  infinicclInt64 = 3,      /**< int64_t. */
  infinicclUInt8 = 4,      /**< uint8_t. */
  infinicclUInt16 = 5,     /**< uint16_t. */
  infinicclUInt32 = 6,     /**< uint32_t. */
  infinicclUInt64 = 7,     /**< uint64_t. */
  infinicclHalf = 8,       /**< IEEE half (same as infinicclFloat16). */
  infinicclFloat16 = 8,    /**< IEEE half; reduced in float. */
  infinicclBFloat16 = 9,   /**< bfloat16; reduced in float. */
  infinicclFloat = 10,     /**< float (same as infinicclFloat32). */
  infinicclFloat32 = 10,   /**< float. */
  infinicclDouble = 11,    /**< double (same as infinicclFloat64). */
  infinicclFloat64 = 11,   /**< double. */
  infinicclNumTypes = 12   /**< The number of data types. */
} infinicclDataType_t;

/** Reduction operation. */
typedef enum {
  infinicclSum = 0,   /**< Sum. */
  infinicclProd = 1,  /**< Product. */
  infinicclMax = 2,   /**< Maximum. */
  infinicclMin = 3,   /**< Minimum. */
  infinicclAvg = 4,   /**< Sum divided by the number of ranks (integer types: truncated). */
  infinicclBand = 5,  /**< Bitwise AND; integer types only (extension). */
  infinicclBor = 6,   /**< Bitwise OR; integer types only (extension). */
  infinicclBxor = 7,  /**< Bitwise exclusive OR; integer types only (extension). */
  infinicclNumOps     /**< The number of operations. */
} infinicclRedOp_t;

/** Opaque communicator handle. */
typedef void *infinicclComm_t;

/** NCCL-style bootstrap id (infinicclGetUniqueId, infinicclCommInitRank). */
typedef struct {
  char internal[INFINICCL_UNIQUE_ID_BYTES]; /**< Opaque bytes; copy as a whole. */
} infinicclUniqueId;

/** @brief Initialises the library.
 *
 * Init starts MPI (MPI_Init_thread, MPI_THREAD_MULTIPLE requested) only if
 * it is not yet initialised; infinicclFinalize finalises MPI only if Init
 * started it. Every other call before Init or after Finalize returns
 * infinicclInvalidUsage, except the error/version queries, the emulated
 * device (infiniccl_sim.h) and the NCCL-style bootstrap (GetUniqueId,
 * CommInitRank), which needs no Init.
 * @param argc the program's argc (may be NULL), passed to MPI.
 * @param argv the program's argv (may be NULL), passed to MPI.
 * @return infinicclSuccess or an error code. */
INFINICCL_API infinicclResult_t infinicclInit(int *argc, char ***argv);
/** @brief Finishes queued work, frees the library's state, and finalises MPI
 * if infinicclInit started it.
 * @return infinicclSuccess; infinicclInvalidUsage inside a group. */
INFINICCL_API infinicclResult_t infinicclFinalize(void);

/** @brief Rank in the world (MPI_COMM_WORLD), as upstream.
 * @param rank receives the rank.
 * @return infinicclSuccess or an error code. */
INFINICCL_API infinicclResult_t infinicclGetRank(int *rank);
/** @brief Size of the world (MPI_COMM_WORLD), as upstream.
 * @param size receives the number of ranks.
 * @return infinicclSuccess or an error code. */
INFINICCL_API infinicclResult_t infinicclGetSize(int *size);

/** @brief Makes the id of a new communicator (NCCL's ncclGetUniqueId) in
 * every build; needs no infinicclInit.
 *
 * The id holds the address of a TCP listener that this call opens in the
 * calling process (IPv4, interface per INFINICCL_SOCKET_IFNAME) and a random
 * secret. One process calls it and passes the id to the others (a file, a
 * socket, MPI_Bcast). That process must also call infinicclCommInitRank
 * with the id, as one of the ranks: its call serves the others. The
 * listener is closed when that call returns; an id that is never joined
 * keeps it until the process exits (at most 64 such ids per process).
 * @param id receives the id.
 * @return infinicclSuccess; infinicclInvalidUsage when 64 ids of this
 * process await their CommInitRank or INFINICCL_SOCKET_IFNAME names no up
 * interface; infinicclSystemError when the socket cannot be opened. */
INFINICCL_API infinicclResult_t infinicclGetUniqueId(infinicclUniqueId *id);
/** @brief A communicator over all ranks (MPI_COMM_WORLD duplicated), each
 * rank bound to a device.
 *
 * CommInitAll duplicates MPI_COMM_WORLD and binds each rank to
 * a device, with upstream's meaning of ndev/devlist: devlist == NULL (any
 * ndev, e.g. upstream's CommInitAll(&comm, size, NULL)) binds the local
 * rank's own device (modulo the count, with a WARN, when there are fewer);
 * with a devlist, devlist[local_rank] when local_rank < ndev, else the local
 * rank's own. A negative ndev or devlist entry is InvalidArgument. When every rank is bound to its own device of a kind with
 * a native CCL, CommInitAll also makes the CCL communicator (rank 0 makes
 * the id, MPI broadcasts it); otherwise device buffers go to MPI.
 * GetUniqueId/CommInitRank are NCCL's way, for programs that number their
 * ranks themselves (see infinicclCommInitRank).
 * @param comm receives the new communicator.
 * @param ndev number of entries in devlist (ignored when devlist is NULL).
 * @param devlist device per local rank, or NULL for the local rank's own.
 * @return infinicclSuccess or an error code. */
INFINICCL_API infinicclResult_t infinicclCommInitAll(infinicclComm_t *comm, int ndev,
                                       const int *devlist);
/** @brief Joins the communicator of a unique id as rank `rank` of `nranks`
 * (NCCL's ncclCommInitRank), on the calling thread's current device.
 *
 * Every rank connects to the process that made the id, presenting the id's
 * secret, nranks and rank. That process waits for the others for at most
 * INFINICCL_TIMEOUT_SEC, the others for its verdict at most twice that
 * (0: no limit). Then what the communicator is depends on every rank
 * alike:
 * - every rank under MPI with infinicclInit called (icclrun, mpirun, srun):
 *   the ranks' MPI_COMM_WORLD processes in the order of their `rank`, with
 *   everything CommInitAll's communicator has (host buffers, the emulated
 *   device, a native CCL where every rank can have one);
 * - no rank under MPI, every rank on this node (one host name and kernel;
 *   torchrun, a shell loop): a communicator of the node's shared memory,
 *   made without MPI (MPI is never initialised). Every collective on host
 *   buffers and on device buffers runs through it at every size; device
 *   buffers go through the native CCL instead where every rank has one
 *   and a device of its own.
 *   Send and Recv (tagged, from any source, grouped) run through it too,
 *   with the semantics they have under MPI. The id's
 *   connections stay open until the communicator exists, to make its
 *   segments. With INFINICCL_SHM=0 every rank returns
 *   infinicclInvalidUsage, and where shared memory cannot be had,
 *   infinicclSystemError;
 * - no rank under MPI, on more than one node, each with a usable native
 *   CCL: a communicator of the CCL only; host buffers on it return
 *   infinicclNotSupported;
 * - otherwise every rank returns infinicclInvalidUsage naming what each rank
 *   lacks (MPI initialised without infinicclInit counts as lacking it),
 *   and, for ranks on several nodes, to launch under icclrun, mpirun or
 *   srun.
 *
 * The same verdict reaches every rank that joined. A wrong secret is refused
 * (infinicclInvalidArgument on that process only, the others go on). Ranks
 * given twice or out of range, or differing nranks: infinicclInvalidUsage.
 * Ranks missing at the timeout: infinicclRemoteError naming them. A rank
 * whose root does not answer: infinicclRemoteError. One thread joins one
 * rank at a time; no thread or socket remains afterwards.
 * @param comm receives the new communicator.
 * @param nranks number of ranks.
 * @param id the id from infinicclGetUniqueId, the same on every rank.
 * @param rank this rank, 0 to nranks-1.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError);
 * infinicclInvalidArgument for an id infinicclGetUniqueId did not make. */
INFINICCL_API infinicclResult_t infinicclCommInitRank(infinicclComm_t *comm, int nranks,
                                        infinicclUniqueId id, int rank);
/** @brief Extension: a communicator over the caller's own MPI communicator, given as
 * its Fortran handle (MPI_Comm_c2f(c) in C, comm.py2f() in mpi4py) so this
 * header needs no mpi.h. Collective over that communicator. It is duplicated
 * (the caller may free its own afterwards) and gets the device binding and
 * native CCL of CommInitAll. A handle that is not a valid intra-communicator
 * (MPI_COMM_NULL, an inter-communicator) returns infinicclInvalidArgument.
 * @param comm receives the new communicator.
 * @param mpi_comm_fint the MPI communicator's Fortran handle.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommInitMpi(infinicclComm_t *comm, long mpi_comm_fint);
/** @brief Extension: a communicator among `nranks` ranks of `parent`, listed in
 * ranks[] (parent ranks, in the order of the new communicator: ranks[i]
 * becomes rank i). Collective over the listed ranks only; the others do not
 * call it (MPI_Comm_create_group; torch.distributed's new_group creates a
 * group on its members alone). Each rank keeps the device of its binding in
 * `parent`. A rank not listed, a rank listed twice or out of range, or
 * nranks < 1 returns infinicclInvalidArgument; a parent without MPI
 * (infinicclCommInitRank) infinicclNotSupported.
 * @param parent the communicator the ranks are numbered in.
 * @param nranks number of entries in ranks.
 * @param ranks parent ranks, in the new communicator's order.
 * @param newcomm receives the new communicator.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommInitRanks(infinicclComm_t parent, int nranks,
                                                       const int *ranks,
                                                       infinicclComm_t *newcomm);
/** @brief Destroys a communicator after its queued work has finished;
 * later use of the handle returns infinicclInvalidUsage.
 * @param comm the communicator.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommDestroy(infinicclComm_t comm);

/** @brief Reduces `count` elements across all ranks; every rank receives the result.
 * @param sendbuff input, `count` elements.
 * @param recvbuff output, `count` elements (may equal sendbuff).
 * @param count elements per rank.
 * @param op reduction.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclAllReduce(const void *sendbuff, void *recvbuff,
                                     size_t count, infinicclDataType_t datatype,
                                     infinicclRedOp_t op, infinicclComm_t comm,
                                     void *stream);

/** @brief Copies the root's `count` elements to every rank (NCCL's
 * out-of-place form: the root's recvbuff is filled too).
 * @param sendbuff input at the root (ignored elsewhere).
 * @param recvbuff output, `count` elements, on every rank.
 * @param count elements.
 * @param root the sending rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclBroadcast(const void *sendbuff, void *recvbuff,
                                     size_t count, infinicclDataType_t datatype,
                                     int root, infinicclComm_t comm,
                                     void *stream);

/** @brief In-place Broadcast (NCCL's ncclBcast).
 * @param buff input at the root, output elsewhere.
 * @param count elements.
 * @param root the sending rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclBcast(void *buff, size_t count,
                                 infinicclDataType_t datatype, int root,
                                 infinicclComm_t comm, void *stream);

/** @brief Reduces `count` elements across all ranks into the root's recvbuff.
 * @param sendbuff input, `count` elements.
 * @param recvbuff output at the root (ignored elsewhere).
 * @param count elements per rank.
 * @param op reduction.
 * @param root the receiving rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclReduce(const void *sendbuff, void *recvbuff,
                                  size_t count, infinicclDataType_t datatype,
                                  infinicclRedOp_t op, int root,
                                  infinicclComm_t comm, void *stream);

/** @brief Gathers every rank's `count` elements on every rank, in rank order.
 * @param sendbuff input, `count` elements.
 * @param recvbuff output, nranks*count elements.
 * @param count elements per rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclAllGather(const void *sendbuff, void *recvbuff,
                                     size_t count, infinicclDataType_t datatype,
                                     infinicclComm_t comm, void *stream);

/** @brief Gathers every rank's `count` elements at the root, in rank order.
 * @param sendbuff input, `count` elements.
 * @param recvbuff output at the root, nranks*count elements.
 * @param count elements per rank.
 * @param root the receiving rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclGather(const void *sendbuff, void *recvbuff,
                                  size_t count, infinicclDataType_t datatype,
                                  int root, infinicclComm_t comm, void *stream);

/** @brief Sends block r of the root's sendbuff to rank r.
 * @param sendbuff input at the root, nranks*count elements.
 * @param recvbuff output, `count` elements.
 * @param count elements per rank.
 * @param root the sending rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclScatter(const void *sendbuff, void *recvbuff,
                                   size_t count, infinicclDataType_t datatype,
                                   int root, infinicclComm_t comm,
                                   void *stream);

/** @brief Reduces nranks*recvcount elements across ranks; rank r receives
 * block r of the result.
 * @param sendbuff input, nranks*recvcount elements.
 * @param recvbuff output, `recvcount` elements.
 * @param recvcount elements each rank receives.
 * @param op reduction.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclReduceScatter(const void *sendbuff, void *recvbuff,
                                         size_t recvcount,
                                         infinicclDataType_t datatype,
                                         infinicclRedOp_t op,
                                         infinicclComm_t comm, void *stream);

/** @brief Sends block p of sendbuff to rank p; block p of recvbuff comes from
 * rank p.
 * @param sendbuff input, nranks*count elements.
 * @param recvbuff output, nranks*count elements.
 * @param count elements per peer.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclAllToAll(const void *sendbuff, void *recvbuff,
                                    size_t count, infinicclDataType_t datatype,
                                    infinicclComm_t comm, void *stream);

/** @brief Sends `count` elements to `peer` (blocking outside a group, until
 * matched; inside a group it completes at infinicclGroupEnd). Outside a
 * group `peer` must differ from the caller's rank; inside one it may equal it.
 * @param sendbuff input, `count` elements.
 * @param count elements.
 * @param peer the receiving rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclSend(const void *sendbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream);

/** @brief Receives `count` elements from `peer` (as infinicclSend).
 * @param recvbuff output, `count` elements.
 * @param count elements.
 * @param peer the sending rank.
 * @param datatype element type.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclRecv(void *recvbuff, size_t count,
                                infinicclDataType_t datatype, int peer,
                                infinicclComm_t comm, void *stream);

/** Extension: the `peer` of infinicclRecvTagged that receives from whichever
 * rank's message matches first; the sender is reported in `*source`. */
#define INFINICCL_ANY_SOURCE (-1)
/** Extension: the largest tag of infinicclSendTagged/infinicclRecvTagged;
 * tags are 0 to INFINICCL_TAG_MAX. The library's MPI tags are its own
 * (tag 0 is the tag of infinicclSend/infinicclRecv), so no tag collides with
 * another communication of the library. An MPI whose MPI_TAG_UB cannot carry
 * a tag (the MPI standard guarantees only 32767) refuses the call with
 * infinicclNotSupported naming the largest tag it carries; Open MPI's and
 * MPICH's carry every tag. */
#define INFINICCL_TAG_MAX 0xFFFFFF

/** @brief Extension: infinicclSend with a tag (MPI's tag): the message
 * matches only an infinicclRecvTagged of the same tag. infinicclSend is tag
 * 0: an infinicclSend matches an infinicclRecvTagged of tag 0, an
 * infinicclSendTagged of tag 0 an infinicclRecv. Between two ranks, messages
 * of one tag match in the order they were sent; messages of different tags
 * may be received in any order (inside a group at any size; outside one, a
 * blocking send of a message above MPI's eager limit waits until its
 * receive is posted).
 *
 * Everything else is infinicclSend's: blocking outside a group, completed
 * at infinicclGroupEnd inside one (batched with the group's other sends and
 * receives), host buffers and device buffers alike (device buffers through
 * MPI are ordered on `stream` and return at once, as every other device
 * call). On a communicator with a native CCL (NCCL, ...), a device-buffer
 * call with tag 0 goes to the CCL as infinicclSend does; any other tag goes
 * through MPI (staged, or direct with a GPU-aware MPI), since CCLs have no
 * tags. A tag outside 0..INFINICCL_TAG_MAX or a peer that is no rank of
 * `comm` returns infinicclInvalidArgument and sends nothing.
 * @param sendbuff input, `count` elements.
 * @param count elements.
 * @param datatype element type.
 * @param peer the receiving rank.
 * @param tag the message's tag, 0 to INFINICCL_TAG_MAX.
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclSendTagged(const void *sendbuff, size_t count,
                                                    infinicclDataType_t datatype, int peer,
                                                    int tag, infinicclComm_t comm,
                                                    void *stream);

/** @brief Extension: infinicclRecv with a tag and, with `peer`
 * INFINICCL_ANY_SOURCE, from any rank: receives the first message of tag
 * `tag` to match, from `peer` or from any rank, and reports its sender in
 * `*source`.
 *
 * Matching and completion are infinicclSendTagged's (tag 0 matches
 * infinicclSend). When `*source` holds the sender: host buffers outside a
 * group, when the call returns; inside a group, when the outermost
 * infinicclGroupEnd returns (device buffers included); device buffers
 * outside a group, once `stream` has passed the call (synchronize `stream`
 * before reading it; with INFINICCL_ASYNC=0 and the other cases where
 * device calls block, on return). `*source` must stay valid until then.
 * Count 0 receives nothing and leaves `*source` as it is. On a
 * communicator with a native CCL a receive from any source goes through
 * MPI (without MPI: the node's shared memory), so it matches only sends
 * that do: host buffers, or a tag other than 0 (a device-buffer send of
 * tag 0 goes to the CCL; send such messages with a tag, or set
 * INFINICCL_BACKEND=mpi). INFINICCL_ANY_SOURCE outside a
 * group needs a communicator of two ranks or more. With an MPI-3 library
 * (Open MPI 4), a receive from any source inside a group takes at most
 * INT_MAX elements (infinicclNotSupported above). A tag outside 0..INFINICCL_TAG_MAX or a peer that is neither a
 * rank of `comm` nor INFINICCL_ANY_SOURCE returns infinicclInvalidArgument
 * and receives nothing.
 * @param recvbuff output, `count` elements.
 * @param count elements.
 * @param datatype element type.
 * @param peer the sending rank, or INFINICCL_ANY_SOURCE.
 * @param tag the message's tag, 0 to INFINICCL_TAG_MAX.
 * @param source receives the sender's rank in `comm` (may be NULL).
 * @param comm the communicator.
 * @param stream the device stream the call is ordered on (NULL: the default
 *        stream); ignored for host buffers.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclRecvTagged(void *recvbuff, size_t count,
                                                    infinicclDataType_t datatype, int peer,
                                                    int tag, int *source,
                                                    infinicclComm_t comm, void *stream);

/** @brief Starts a group: group calls (extension: not in the upstream header), with NCCL's
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
 *    infinicclInvalidUsage.
 * @return infinicclSuccess or an error code. */
INFINICCL_API infinicclResult_t infinicclGroupStart(void);
/** @brief Ends a group; the outermost GroupEnd completes it (see
 * infinicclGroupStart).
 * @return infinicclSuccess, or the first error of the group's calls. */
INFINICCL_API infinicclResult_t infinicclGroupEnd(void);

/* ---- Extensions (not in the upstream header) ---- */

/** @brief A static, human-readable name for a result code. Never NULL.
 * @param result the code.
 * @return the name. */
INFINICCL_API const char *infinicclGetErrorString(infinicclResult_t result);

/** @brief The message of the last failed call on `comm`, or of the last failed call
 * on the calling thread when comm is NULL. Empty string when there was none;
 * "unknown communicator" for a handle never issued; for a destroyed or
 * aborted one, a message saying so.
 * The pointer stays valid until the next failing call on the same comm or
 * thread. Never NULL.
 * @param comm a communicator, or NULL for the calling thread.
 * @return the message. */
INFINICCL_API const char *infinicclGetLastError(infinicclComm_t comm);

/** @brief INFINICCL_VERSION_CODE of the library actually loaded. Works
 * before Init.
 * @param version receives the code (major*10000 + minor*100 + patch).
 * @return infinicclSuccess; infinicclInvalidArgument for NULL. */
INFINICCL_API infinicclResult_t infinicclGetVersion(int *version);

/** A buffer of this many bytes always holds infinicclGetDeviceRuntimes's list. */
#define INFINICCL_DEVICE_RUNTIMES_BYTES 128
/** @brief The device runtimes compiled into the library actually loaded, as a
 * comma-separated, NUL-terminated list in a fixed order: "cpu" and "sim" (the
 * emulated device) always, and between them each vendor runtime the build has:
 * "cuda", "metax", "iluvatar", "moore", "hip", "ascend", "cambricon". So a
 * build without vendor runtimes gives "cpu,sim", one with CUDA
 * "cpu,cuda,sim". The list is what the build has, whether or not a device of
 * that kind is present (infiniccl-info prints the same list as "device
 * runtimes built:"). Memory of a device whose runtime is not in the list
 * cannot be passed to any call. Works before Init.
 * @param names receives the list.
 * @param bytes the size of names; INFINICCL_DEVICE_RUNTIMES_BYTES always
 *        suffices.
 * @return infinicclSuccess; infinicclInvalidArgument for NULL or a buffer too
 *         small for the list (the message names the size it needs; names is
 *         then left as it was). */
INFINICCL_API infinicclResult_t infinicclGetDeviceRuntimes(char *names, size_t bytes);

/** Color that takes part in infinicclCommSplit without joining a
 * communicator. */
#define INFINICCL_SPLIT_NOCOLOR (-1)
/** @brief A new communicator from the ranks of `comm` that pass the same color
 * (NCCL's ncclCommSplit; collective over `comm`: every rank must call it).
 * Ranks are ordered by key, then by their rank in `comm`. A negative color
 * (INFINICCL_SPLIT_NOCOLOR) still takes part and sets *newcomm to NULL. The
 * new communicator keeps the device binding of `comm` and shares the
 * process's staging memory; it is independent of `comm` afterwards (either
 * may be destroyed first). A rank passing newcomm == NULL takes part without
 * a color and returns infinicclInvalidArgument.
 * @param comm the parent communicator.
 * @param color ranks with the same color join one communicator; negative:
 *        none.
 * @param key orders the ranks in the new communicator.
 * @param newcomm receives the new communicator (NULL for a negative color).
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommSplit(infinicclComm_t comm, int color, int key,
                                                   infinicclComm_t *newcomm);

/** @brief Gives up `comm` without talking to other ranks: usable after an error, or
 * from another thread while a call on `comm` is blocked. Later calls on the
 * handle return infinicclInvalidUsage saying it was aborted. The library's
 * resources for it are freed; its MPI communicator is not (MPI_Comm_free and
 * MPI_Comm_disconnect are collective) and goes at MPI_Finalize.
 * A call on another thread that waits in the node's shared memory returns
 * infinicclInvalidUsage saying `comm` was aborted. A call inside MPI cannot
 * be cancelled: CommAbort waits up to one second for it to return, and if it
 * has not, logs which call it is and ends the job with MPI_Abort on the
 * communicator (where NCCL's abort would make the blocked call return an
 * error).
 * @param comm the communicator.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommAbort(infinicclComm_t comm);

/** Flags of infinicclCommShrink (NCCL's NCCL_SHRINK_DEFAULT and
 * NCCL_SHRINK_ABORT). */
#define INFINICCL_SHRINK_DEFAULT 0x00
/** Abort what is in flight on the parent first (the failure case): its queued
 * device work is dropped and its streams released, its calls waiting in
 * shared memory return, and with a fault-tolerant MPI its MPI communicator is
 * revoked so calls blocked inside MPI return too. */
#define INFINICCL_SHRINK_ABORT 0x01

/** @brief Revokes `comm` (NCCL's ncclCommRevoke; an extension): this rank's
 * pending and later calls on `comm` fail fast with infinicclRemoteError
 * ("revoked"), and so do the other ranks' where they can see it: every rank's
 * with an MPI that tolerates failures (ULFM: Open MPI 5 under
 * `mpirun --with-ft ulfm`), which revokes the MPI communicator, and
 * every rank waiting in the node's shared memory. Local and never blocking: a
 * rank blocked on a live peer that will never come returns, from a Send, a
 * Recv, a group, a wait in the node's shared memory, queued device work or
 * the native CCL. A host collective blocked inside one of MPI's own calls
 * returns only where the library polls MPI's request: with a fault-tolerant
 * MPI, with MPI below MPI_THREAD_MULTIPLE, or with more ranks on the node
 * than cores. Afterwards
 * `comm` is good for infinicclCommShrink, infinicclCommGetFailedRanks,
 * infinicclCommAbort and infinicclCommDestroy only.
 * @param comm the communicator.
 * @param flags 0 (no flags are defined).
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommRevoke(infinicclComm_t comm, int flags);

/** @brief The ranks of `comm` known to have failed (an extension, for
 * choosing what to pass to infinicclCommShrink): processes MPI reports as
 * failed (a fault-tolerant MPI) and ranks of this node whose process is gone
 * (the shared-memory transport's liveness). Collective over the surviving
 * ranks with a fault-tolerant MPI, which agree on the list (MPIX_Comm_agree),
 * so every survivor gets the same ranks; local otherwise.
 * @param comm the communicator.
 * @param ranks receives the failed ranks in `comm`'s numbering, ascending
 *        (may be NULL when *count is 0).
 * @param count in: the capacity of `ranks`; out: the number of failed ranks
 *        (which may exceed the capacity: then only the first ones are written).
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommGetFailedRanks(infinicclComm_t comm, int *ranks,
                                                            int *count);

/** @brief A communicator of `comm`'s ranks less `excludeRanks` (NCCL's
 * ncclCommShrink; an extension). Called by every rank that stays, never by an
 * excluded one; the survivors keep their relative order. The new
 * communicator gets every path a new communicator of those ranks gets: a
 * fresh shared-memory segment, its own progress engine and a CCL
 * communicator. `comm` stays valid and is destroyed (or aborted) as usual.
 * With INFINICCL_SHRINK_DEFAULT the excluded ranks must be alive or dead but
 * not in a call on `comm`; the survivors' queued work on `comm` completes
 * first. With INFINICCL_SHRINK_ABORT (after a failure) what is in flight on
 * `comm` is aborted first; a fault-tolerant MPI then shrinks the MPI
 * communicator to its live processes (MPIX_Comm_shrink), so every excluded
 * rank must have failed. The survivors must pass the same list: they check
 * it before making anything, and a list that differs, or that excludes a
 * rank that calls, returns infinicclInvalidUsage on every rank that called.
 * @param comm the parent communicator.
 * @param excludeRanks the ranks to leave out, in `comm`'s numbering.
 * @param excludeCount how many; 0 is a copy of `comm`.
 * @param newcomm receives the new communicator.
 * @param flags INFINICCL_SHRINK_DEFAULT or INFINICCL_SHRINK_ABORT.
 * @return infinicclSuccess; infinicclInvalidArgument for a bad list (out of
 *         range, repeated, naming the caller); or another error code
 *         (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommShrink(infinicclComm_t comm,
                                                    const int *excludeRanks, int excludeCount,
                                                    infinicclComm_t *newcomm, int flags);

/** @brief A communicator of `comm`'s ranks and `newRanks` new processes (NCCL's
 * ncclCommGrow; an extension): every rank of `comm` calls it, and MPI starts
 * `command` with `argv` as the new processes (MPI_Comm_spawn, root rank 0 of
 * `comm`). Each new process calls infinicclInit and then
 * infinicclCommGrow(NULL, 0, NULL, NULL, &newcomm), which joins the
 * processes that started it. The ranks of `comm` keep their numbers; the
 * new processes follow, in their own order. `comm` stays valid. A started
 * process that has not joined within half of INFINICCL_TIMEOUT_SEC is taken
 * as dead: every rank of `comm` returns infinicclRemoteError, and `comm`
 * still works.
 * @param comm the communicator to grow, or NULL in a started process.
 * @param newRanks how many processes to start (at least 1), or 0 with a NULL
 *        `comm`.
 * @param command the program to start (ignored on ranks other than 0).
 * @param argv its arguments without the program name, NULL-terminated, or NULL.
 * @param newcomm receives the grown communicator.
 * @return infinicclSuccess; infinicclInvalidArgument for a bad count or a NULL
 *         command on rank 0 (on every rank of `comm`, nothing started) or NULL
 *         newcomm; infinicclInvalidUsage for a NULL
 *         `comm` in a process nobody started; infinicclRemoteError when a
 *         started process died before it joined; or another error code
 *         (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommGrow(infinicclComm_t comm, int newRanks,
                                                  const char *command, char *const *argv,
                                                  infinicclComm_t *newcomm);

/** @brief Whether work already handed to the device for `comm` has failed since
 * (NCCL's ncclCommGetAsyncError; an extension): sets *asyncError to
 * infinicclSuccess, or to the error, whose message infinicclGetLastError(comm)
 * then gives. Never blocks and talks to no other rank, so a monitoring
 * thread may poll it while `comm` is in use and call infinicclCommAbort on an
 * error. Device work that can fail after its call returned: the native
 * CCL's, and on MPI the calls on device buffers queued to the
 * communicator's progress engine (INFINICCL_ASYNC, on by default), whose
 * failure every later call on `comm` also returns. Host-buffer calls on MPI
 * have finished (or failed) when they return.
 * @param comm the communicator.
 * @param asyncError receives infinicclSuccess or the error.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommGetAsyncError(infinicclComm_t comm,
                                                           infinicclResult_t *asyncError);

/** @brief Extension: what the calls in flight on `comm` wait for, as text, for a
 * timeout's message (the torch backend's names the ranks that did not arrive
 * this way). Never blocks and talks to no other rank: meant for another
 * thread while a call on `comm` runs. One line per call in flight (the
 * caller's, then one queued to the progress engine), as the watchdog's ERROR
 * line gives it: operation, sequence number, arguments, and what this node's
 * shared-memory board shows of the other ranks ("ranks that have not reached
 * it: 1,2", ranks in another operation, ranks that returned from it early or
 * have left `comm`; ranks on other nodes as unknown). An empty string when no
 * call is in flight.
 * @param comm the communicator.
 * @param desc receives the text, NUL-terminated, cut to fit.
 * @param len bytes at `desc`, at least 1.
 * @return infinicclSuccess, infinicclInvalidArgument for a NULL `desc` or a
 *         zero `len`, or another error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommDescribeWait(infinicclComm_t comm, char *desc,
                                                         size_t len);

/** @brief Number of ranks in a communicator.
 * @param comm the communicator.
 * @param count receives the number of ranks.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommCount(infinicclComm_t comm, int *count);
/** @brief The caller's rank within a communicator.
 * @param comm the communicator.
 * @param rank receives the rank.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclCommUserRank(infinicclComm_t comm, int *rank);

/** Host staging of device buffers (extension). Counters are process-wide and
 * cumulative since infinicclInit, except bytes_held (now). */
typedef struct {
  unsigned long long allocations;      /**< staging buffers allocated */
  unsigned long long frees;            /**< staging buffers freed */
  unsigned long long bytes_held;       /**< host staging bytes held now (idle + in use) */
  unsigned long long peak_bytes_held;  /**< high-water mark of bytes_held */
  int pinned;                          /**< 1 if the buffers held now are all pinned */
  unsigned long long d2h_copies, /**< device-to-host staging copies */
      d2h_bytes;                  /**< bytes copied device to host */
  unsigned long long h2d_copies,  /**< host-to-device staging copies */
      h2d_bytes;                  /**< bytes copied host to device */
  unsigned long long staged_calls;     /**< device calls staged through host memory (pooled buffers or the node's shared-memory segment) */
  unsigned long long pipelined_calls;  /**< of those, split into several chunks */
  unsigned long long direct_calls;     /**< device calls given to MPI directly */
} infinicclStagingStats;

/** @brief The staging counters. Between Init and Finalize only
 * (infinicclInvalidUsage otherwise).
 * @param stats receives the counters.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclGetStagingStats(infinicclStagingStats *stats);
/** @brief Frees all idle cached staging memory now.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError). */
INFINICCL_API infinicclResult_t infinicclMemTrim(void);

#ifdef __cplusplus
}
#endif

#endif /* INFINICCL_INFINICCL_H_ */
