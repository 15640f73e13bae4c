// The staged path: a collective on device buffers over an MPI that cannot
// read device memory.
//
// Every collective is column-separable: its buffers are S send blocks and R
// receive blocks of `count` elements (AllReduce 1/1, AllGather 1/n,
// ReduceScatter n/1, AllToAll n/n, ...), and running it on the same column
// range [o, o+L) of every block yields that range of the result. So one
// pipeline serves them all: the columns are cut into chunks of about
// INFINICCL_PIPELINE_CHUNK_BYTES, each chunk's slices are copied into a pooled
// host buffer on the user's stream, MPI runs on the host buffer, and the
// result slices are copied back. Two buffers alternate, so the device-to-host
// copy of chunk k+1 (on the user's stream) and the host-to-device copy of
// chunk k-1 (on a second stream) run on the copy engines while MPI works on
// chunk k. A small operation is one chunk, all on the user's stream.
// These functions return when the results are in the device buffers; the
// progress engine (progress/engine.h) runs them on its own thread with its
// own stream in place of the user's, so that the user's call returns at once.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "staging/staging_pool.h"
#include "core/coll_args.h"
#include "device/device_runtime.h"

namespace infiniccl {

struct BufferPlacement {
  bool send_on_device;  // send buffer used at this rank and in device memory
  bool recv_on_device;
};

// `args` has been validated (send_bytes / recv_bytes set, count > 0).
// `owner` is the communicator, for the staging pool's bookkeeping.
//
// Every rank must cut the operation into the same chunks, so the plan
// depends only on what all ranks share (kind, count, dtype, nranks, config),
// never on this rank's role; and all ranks of one call must pass the same
// kind of memory (a rank on host buffers makes one MPI call, not chunks).
// `chunk_bytes` (0: INFINICCL_PIPELINE_CHUNK_BYTES, else the device's
// default) is for callers whose ranks stage through different device kinds
// (hier/: they agree on one size, or they would cut differently).
Status RunStaged(Backend &host_backend, DeviceRuntime &device, const CollArgs &args,
                 BufferPlacement placement, int nranks, const void *owner,
                 size_t chunk_bytes = 0);

// A one-chunk staged call split around the progress engine's gate, in the
// shape of Aluminum's host-transfer backend: the copies run on the caller's
// stream, the engine's thread only runs the host backend (MPI, or shared
// memory for small calls) on the slot. On the caller's stream:
//   [device-to-host copies][engine's event][gate][host-to-device copies][done]
// so a small queued call crosses no more threads than a blocking one.
// - IfOneChunk: the call's plan when it is one chunk and every buffer it
//   uses at this rank is device memory (a host buffer would need the
//   engine's thread to copy); nullptr otherwise.
// - Begin (caller's thread, on IfOneChunk's result, before the engine's
//   Enqueue): leases the slot, queues the device-to-host copies on the
//   caller's stream. The slots of calls queued and not yet retired stay
//   within INFINICCL_STAGING_CACHE_BYTES together, and are pinned: where
//   this one's would not be, Begin queues nothing and says so (`began`
//   false), and the call goes to the engine's thread whole, leasing there
//   when it runs.
// - RunHost (engine's thread, once the stream reached the call): the host
//   backend on the slot.
// - End (caller's thread, right after the gate wait, inside Enqueue): queues
//   the host-to-device copies and the `done` event on the caller's stream.
// - Retire (engine's thread, after the gate opened, before the next
//   operation on the same stream starts): waits for `done`, which depends on
//   nothing but those copies, and gives the slot back.
class StagedOnStream {
 public:
  StagedOnStream() = default;
  ~StagedOnStream();
  StagedOnStream(const StagedOnStream &) = delete;
  StagedOnStream &operator=(const StagedOnStream &) = delete;

  // The largest slot a one-chunk call leases on `device` (what a
  // communicator that queues primes the pool with).
  static size_t LargestSlotBytes(DeviceRuntime &device);
  static std::shared_ptr<StagedOnStream> IfOneChunk(DeviceRuntime &device,
                                                    const CollArgs &args,
                                                    BufferPlacement placement, int nranks);
  Status Begin(DeviceRuntime &device, const CollArgs &args, const void *owner, bool *began);
  Status RunHost(Backend &host_backend) const;
  Status End();
  void Retire();

 private:
  DeviceRuntime *device_ = nullptr;
  CollArgs args_{};  // the caller's (its stream)
  CollArgs host_{};  // MPI's, on the slot
  size_t elem_ = 0, send_blocks_ = 0, recv_blocks_ = 0;
  StagingLease lease_;
  void *done_ = nullptr;
  // kIn: copies in queued, no gate yet; kGated: the gate is queued, the
  // copies out may not be; kRecorded: `done` follows the copies out.
  enum class State { kNone, kIn, kGated, kRecorded } state_ = State::kNone;
};

// A one-rank reduction of device buffers (Path::kLocalCopy): recvbuff =
// sendbuff on the caller's stream, waited for unless `stream_ordered`.
Status RunLocalCopy(DeviceRuntime &device, const CollArgs &args, BufferPlacement placement,
                    bool stream_ordered);

// The direct path: device buffers handed as they are to a backend that reads
// them (ReadsDeviceMemory), after the work queued on the caller's stream;
// counted in the staging statistics as a direct call.
Status RunDirect(Backend &backend, DeviceRuntime &device, const CollArgs &args);

// One staging copy between device and host memory on `stream` (not waited
// for), counted in the staging statistics: every copy the staging layer
// makes goes through here.
Status StageCopy(DeviceRuntime &device, void *dst, const void *src, size_t bytes,
                 CopyKind kind, void *stream);

// How an operation of `count` columns is cut into chunks: `chunks` balanced
// pieces (widths differ by at most one column), each at most about
// INFINICCL_PIPELINE_CHUNK_BYTES of the widest buffer, with both slots
// within the pool's cap. Every rank computes the same schedule.
struct ChunkSchedule {
  struct Piece {
    size_t offset, cols;
  };
  size_t count = 0;   // columns in all
  size_t chunks = 1;

  size_t max_cols() const { return (count + chunks - 1) / chunks; }  // what a slot holds
  Piece at(size_t k) const {
    const size_t base = count / chunks, extra = count % chunks;
    return {k * base + (k < extra ? k : extra), base + (k < extra ? 1 : 0)};
  }
};

// `count` columns whose widest buffer has `widest` blocks per column and
// whose buffers together have `blocks`, of `elem` bytes each.
ChunkSchedule PlanChunks(size_t count, size_t widest, size_t blocks, size_t elem,
                         size_t chunk_bytes, size_t cap_bytes);

}  // namespace infiniccl
