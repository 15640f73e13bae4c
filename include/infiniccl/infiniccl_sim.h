/**
 * @file infiniccl_sim.h
 * @brief InfiniCCL's EMULATED device ("sim"), usable from outside the library.
 *
 * Programs without an accelerator can allocate emulated device memory, copy
 * to and from it, order work on emulated streams with events, and queue
 * emulated kernels, then hand those pointers and streams to the collectives
 * of infiniccl.h as they would CUDA memory and a cudaStream_t: the library
 * treats emulated memory as device memory (staged through host memory, on
 * the caller's stream) when the emulated device is enabled.
 *
 *  - Enable it with INFINICCL_DEVICE=sim in the environment (read once, at
 *    the first call into the library). Without it every call here returns
 *    infinicclInvalidUsage and says so (infinicclGetLastError(NULL)).
 *  - No infinicclInit needed: these calls work before Init, without it and
 *    after Finalize (the emulated device does not depend on MPI).
 *  - Emulated memory is host memory the library tracks; the CPU may read it,
 *    but a program that wants to stay correct on a real device copies with
 *    infinicclSimMemcpy. Each stream is a worker thread of its own (an
 *    emulated copy engine); INFINICCL_SIM_COPY_GBPS throttles copies between
 *    host and emulated memory.
 *  - Streams and events are opaque handles. A NULL stream is the emulated
 *    device's default stream (for infinicclSimMemcpy: copy now, returning
 *    when the copy is done).
 *  - Errors are returned as codes with a message for
 *    infinicclGetLastError(NULL), never aborted on: a pointer that is not an
 *    emulated allocation, a stream or event that was destroyed or never made
 *    here are infinicclInvalidArgument; a NULL output pointer too.
 *  - Thread-safe: any thread may call any function.
 *
 * Plain C99, like infiniccl.h; link with -linfiniccl.
 */
#ifndef INFINICCL_INFINICCL_SIM_H_
#define INFINICCL_INFINICCL_SIM_H_

#include <stddef.h>

#include <infiniccl/infiniccl.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief Emulated device memory on the current emulated device, 256-byte
 * aligned. bytes == 0 succeeds with *ptr = NULL.
 * @param ptr receives the pointer.
 * @param bytes size.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimMalloc(void **ptr, size_t bytes);
/** @brief Frees what infinicclSimMalloc returned (NULL: nothing to do). Like
 * cudaFree it first waits for the work queued on the default stream and on
 * every stream made by infinicclSimStreamCreate, so a copy still queued
 * never touches freed memory. A pointer into the middle of an allocation,
 * or one freed already, is refused.
 * @param ptr the allocation, or NULL.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimFree(void *ptr);
/** @brief Copies `bytes` bytes in any direction (host to device, device to host,
 * device to device), inferred from which side lies in emulated memory; a
 * copy between two host pointers is refused. Ordered on `stream` after the
 * work queued there; a NULL stream copies now (returns when done). Each
 * device side must lie wholly inside one allocation.
 * @param dst destination.
 * @param src source.
 * @param bytes size.
 * @param stream emulated stream, or NULL to copy now.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimMemcpy(void *dst, const void *src, size_t bytes,
                                                   void *stream);

/** @brief A new emulated stream (a worker thread of its own).
 * @param stream receives the handle.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamCreate(void **stream);
/** @brief Waits for the work queued on the stream, then destroys it.
 * @param stream the stream (not NULL: the default stream stays).
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamDestroy(void *stream);
/** @brief Returns when everything queued on the stream so far has run.
 * @param stream the stream, or NULL for the default stream.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamSynchronize(void *stream);

/** @brief A new emulated event.
 * @param event receives the handle.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimEventCreate(void **event);
/** @brief The event completes when the stream reaches this point. Recording
 * again moves it to the new point (as cudaEventRecord).
 * @param event the event.
 * @param stream the stream, or NULL for the default stream.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimEventRecord(void *event, void *stream);
/** @brief Work queued on `stream` after this waits for the event's last
 * record (none yet: no wait).
 * @param stream the waiting stream, or NULL for the default stream.
 * @param event the event.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamWaitEvent(void *stream, void *event);
/** @brief Returns when the stream has reached the event's last record
 * (at once when it was never recorded), as cudaEventSynchronize.
 * @param event the event.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimEventSynchronize(void *event);
/** @brief Whether the stream has reached the event's last record, without
 * waiting, as cudaEventQuery: *done is 1 when it has (or when the event was
 * never recorded), else 0.
 * @param event the event.
 * @param done receives 1 or 0.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimEventQuery(void *event, int *done);
/** @brief Destroys an event. May be called while a record of, or a wait
 * for, the event is still queued: its memory is released once the streams
 * have passed them.
 * @param event the event.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimEventDestroy(void *event);

/** @brief An emulated kernel: holds `stream` for `microseconds` (at least
 * that long; a sleeping worker, no CPU used). Work queued after it on the
 * stream, including collectives and events, runs only once it ends.
 * @param stream the stream, or NULL for the default stream.
 * @param microseconds how long.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimKernel(void *stream, unsigned microseconds);

/** @brief Begins capturing `stream` into a graph, as cudaStreamBeginCapture:
 * until infinicclSimStreamEndCapture, the work queued on it (copies,
 * kernels, event records and waits, the library's own copies) is recorded,
 * not run, and synchronising it fails with infinicclInvalidUsage and
 * invalidates the capture. Collectives on a capturing stream run only where
 * their path can be captured (docs/guide/errors.md); the others return
 * infinicclInvalidUsage and record nothing.
 * @param stream a stream from infinicclSimStreamCreate (not NULL: the
 *        default stream cannot be captured, as CUDA's legacy stream).
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamBeginCapture(void *stream);
/** @brief Ends the capture of `stream` and returns what it recorded as a graph.
 * A capture invalidated by a synchronisation fails (infinicclInvalidUsage)
 * and makes no graph.
 * @param stream the capturing stream.
 * @param graph receives the graph handle (NULL on failure).
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamEndCapture(void *stream, void **graph);
/** @brief Whether `stream` is capturing.
 * @param stream the stream, or NULL for the default stream (never capturing).
 * @param capturing receives 1 or 0.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimStreamIsCapturing(void *stream, int *capturing);
/** @brief How many pieces of work (nodes) a graph holds.
 * @param graph the graph.
 * @param nodes receives the count.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimGraphNodes(void *graph, size_t *nodes);
/** @brief Queues the graph's work on `stream`, in the order it was captured,
 * as cudaGraphLaunch; it may be launched any number of times. An event
 * record in it takes a new point of the event at each launch.
 * @param graph the graph.
 * @param stream the stream, or NULL for the default stream.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimGraphLaunch(void *graph, void *stream);
/** @brief Destroys a graph (launches already queued still run).
 * @param graph the graph.
 * @return infinicclSuccess or an error code (message: infinicclGetLastError(NULL)). */
INFINICCL_API infinicclResult_t infinicclSimGraphDestroy(void *graph);

#ifdef __cplusplus
}
#endif

#endif /* INFINICCL_INFINICCL_SIM_H_ */
