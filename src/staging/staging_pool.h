// StagingPool: reusable host buffers for staging device data through host
// memory, shared by every communicator of the process.
//
// - Leases are RAII: a buffer goes back to the pool on every path, errors
//   included. Once sizes repeat, a call allocates nothing.
// - Pinned memory from the device runtime when the policy allows
//   (INFINICCL_STAGING_PINNED), pageable otherwise; a failed pinned
//   allocation falls back to pageable with one WARN.
// - Retention: bytes held (idle + leased) are kept within
//   INFINICCL_STAGING_CACHE_BYTES by freeing idle buffers; the pipeline sizes
//   its leases so that one call never needs more than that, and calls queued
//   on a stream lease their slots only within it (OverCap::kDecline).
// - CommDestroy frees idle buffers only that communicator used; Finalize and
//   infinicclMemTrim free all idle buffers.
// - Threads that must not wait for the device never allocate or free pinned
//   memory: cudaFreeHost waits for the device, and cudaMallocHost may (the
//   CUDA guide's implicit synchronisation). They are a progress engine's
//   thread (callers' streams wait for gates only it opens) and a caller's
//   thread while it queues a call (NCCL's contract: it returns at once,
//   whatever runs on the device). Where such a thread finds no idle buffer,
//   it gets pageable memory for that call and asks for a pinned buffer of
//   that size; its frees are deferred. The pool's memory thread
//   (iccl-pinned) makes the buffers asked for and frees the deferred ones
//   once they reach the cap; a thread that may wait (a synchronous staged
//   call, CommDestroy, Finalize, MemTrim) frees them at its next pool call.
// - The pool's mutex is never held across an allocation or a free: those
//   may wait for the device, whose streams may wait for an engine that
//   needs the mutex (to lease, or to return a finished call's slot).
#pragma once

#include <infiniccl/infiniccl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "core/status.h"
#include "device/device_runtime.h"

namespace infiniccl {

class StagingPool;

struct StagingBlock {
  char *data = nullptr;
  size_t bytes = 0;
  bool pinned = false;
  DeviceRuntime *runtime = nullptr;  // allocator of pinned memory
  const void *owner = nullptr;       // the one communicator that used it, or null
  bool shared = false;               // used by more than one communicator
};

class StagingLease {
 public:
  StagingLease() = default;
  ~StagingLease() { Reset(); }
  StagingLease(StagingLease &&other) noexcept { *this = std::move(other); }
  StagingLease &operator=(StagingLease &&other) noexcept;
  StagingLease(const StagingLease &) = delete;
  StagingLease &operator=(const StagingLease &) = delete;

  char *data() const { return block_.data; }
  size_t bytes() const { return block_.bytes; }
  bool pinned() const { return block_.pinned; }
  void Reset();  // returns the buffer to the pool now
  // Forgets the buffer without returning it: copies nobody can wait for may
  // still touch it.
  void Leak() {
    pool_ = nullptr;
    block_ = StagingBlock{};
  }

 private:
  friend class StagingPool;
  StagingPool *pool_ = nullptr;
  StagingBlock block_;
};

class StagingPool {
 public:
  static StagingPool &Global();

  // A buffer of at least `bytes` for copies with `runtime`, on behalf of the
  // communicator `owner`. One call's leases are planned within the cap
  // (PlanChunks); what several calls lease together is not: kDecline leaves
  // `out` empty (and returns Ok) where no idle buffer fits and a new one
  // would take the bytes held over the cap. A queued one-chunk call leases
  // so (StagedOnStream), as many of them may wait on a stream at once.
  enum class OverCap { kAllocate, kDecline };
  Status Lease(size_t bytes, DeviceRuntime &runtime, const void *owner, StagingLease *out,
               OverCap over_cap = OverCap::kAllocate);

  // This thread (a progress engine's) never waits for the device (see
  // above), for the rest of its life.
  static void DeferFreesOnThisThread();
  // Nor does this one while the object lives (a caller's, queuing a call).
  class NoDeviceWait {
   public:
    NoDeviceWait();
    ~NoDeviceWait();
    NoDeviceWait(const NoDeviceWait &) = delete;
    NoDeviceWait &operator=(const NoDeviceWait &) = delete;

   private:
    bool saved_;
  };
  // Frees what threads that do not wait deferred, unless this thread defers
  // too; with `over_cap_only`, only once they hold the cache's cap. One
  // atomic load when there is nothing.
  void FreeDeferred(bool over_cap_only = false);
  // Returns once the memory thread has done what it was asked before.
  void Quiesce();
  // An idle pinned buffer of at least `bytes` for `runtime`, made now unless
  // there is one (communicator creation, which may wait for the device: a
  // queued call's thread may not, and finds it there).
  void Prime(size_t bytes, DeviceRuntime &runtime);

  void Trim();                          // Quiesce, then free every idle buffer
  void ReleaseOwner(const void *owner); // free idle buffers only `owner` used
  size_t cap_bytes() const;

  // Counters kept by the pipeline.
  void CountCopy(CopyKind kind, size_t bytes, size_t copies = 1);
  void CountCall(bool pipelined);
  void CountDirect();
  infinicclStagingStats Stats();
  void ResetCounters();  // infinicclInit

 private:
  friend class StagingLease;
  void Return(StagingBlock block);
  // Takes idle buffers (largest first) until held + incoming <= cap.
  void EnforceCapLocked(size_t incoming, std::vector<StagingBlock> *to_free);
  // No longer counted as held: to `to_free`, for Release outside mutex_
  // (or deferred, on an engine's thread).
  void DetachLocked(const StagingBlock &b, std::vector<StagingBlock> *to_free);
  void TakeDeferredLocked(std::vector<StagingBlock> *to_free);
  // Makes the pinned buffers asked for; mutex_ not held.
  void Replenish();
  // Wakes (or starts, in a new process) the memory thread; mutex_ held.
  void WakeMemoryThreadLocked();
  void MemoryThreadLoop();
  // Frees detached buffers; mutex_ not held.
  static void Release(const std::vector<StagingBlock> &blocks);
  // `bytes` rounded already, counted as held by the caller; mutex_ not held.
  StagingBlock Allocate(size_t bytes, DeviceRuntime &runtime, Status *status);
  struct Wanted {
    size_t bytes;
    DeviceRuntime *runtime;
  };
  // Makes one pinned block idle for a Wanted, unless one is idle already or
  // the leased bytes would pass the cap; mutex_ not held.
  void MakeIdlePinned(const Wanted &w);

  std::mutex mutex_;
  std::vector<StagingBlock> idle_;
  std::vector<StagingBlock> deferred_;  // pinned, freed by a non-engine thread
  std::atomic<size_t> deferred_bytes_{0};
  std::vector<Wanted> wanted_;  // pinned buffers asked for (see above)
  // The memory thread: woken by memory_cv_; quiet_cv_ says it is done.
  std::condition_variable memory_cv_, quiet_cv_;
  bool memory_work_ = false, memory_busy_ = false;
  long memory_thread_pid_ = 0;
  size_t held_bytes_ = 0, pinned_held_bytes_ = 0, peak_bytes_ = 0;
  uint64_t allocations_ = 0, frees_ = 0;
  std::atomic<uint64_t> d2h_copies_{0}, d2h_bytes_{0}, h2d_copies_{0}, h2d_bytes_{0};
  std::atomic<uint64_t> staged_calls_{0}, pipelined_calls_{0}, direct_calls_{0};
  bool warned_pinned_ = false;
};

}  // namespace infiniccl
