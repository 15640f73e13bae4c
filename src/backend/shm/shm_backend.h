// ShmBackend: collectives among the ranks of a communicator that all share
// one node, through a shared-memory segment (mpi/node_segment.h) instead of
// MPI's transport: each rank copies its part into its own region of the
// segment, the ranks reduce in place there (each its own slice, over every
// rank's copy), and each copies the results out. MPI is not called at all.
//
// AllReduce, ReduceScatter, Reduce, AllGather and Broadcast; every dtype and
// op (float16 and bfloat16 reduced in float). Buffers of any size run in
// chunks through two stages per rank, so a rank copies chunk k+1 in while
// slower ranks still read chunk k (a large AllReduce with streaming
// stores). Buffers in device memory (the staged path of a device without a
// CCL) are copied by the device runtime straight into and out of the
// segment, on the call's stream; the segment is page-locked with that
// runtime at the first such call (cudaHostRegister and its kin).
//
// A queued AllReduce of device buffers of one stage at most lands: its
// input is copied on the caller's stream into the rank's landing area
// (LandIn, before the progress engine's gate), the ranks reduce there, each
// rank writing its reduced slice into every landing area (RunLanded, on
// the engine's thread), and the result is copied out of the own landing
// area behind the gate (LandOut). No rank reads another's memory once the
// reduction is done, so a landing area is free again as soon as its own
// copy out has run, which the caller's streams order without the engine.
//
// Ranks step through chunks in lockstep on counters in the segment, one per
// phase per rank (arrived, reduced, done). A waiter spins briefly (not when
// the node's ranks outnumber its cores), polls yielding its core, then
// sleeps on the counter's futex; a poster wakes only when someone sleeps.
// So four ranks on two cores do not take the core from the rank they wait
// for. At each call's first chunk every rank compares every peer's call
// descriptor, written beside its arrival (Describe, Meet): a call that
// differs between ranks is refused on all of them. A waiter notices its own
// CommAbort, a peer that left (CommAbort, CommDestroy: a mark in its
// control) and a peer process that is gone (Departed); docs/ARCHITECTURE.md,
// "Shared memory on a node: the segment's protocol".
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "device/device_runtime.h"
#include "mpi/node_segment.h"

namespace infiniccl {

class ShmBackend final : public Backend {
 public:
  // Collective over `comm`: a backend when every rank of `comm` is on this
  // node and the segment could be made on all of them, else null with *why.
  // An error status only for a failed MPI call.
  static Status Create(MPI_Comm comm, int rank, int size, std::unique_ptr<ShmBackend> *out,
                       std::string *why);

  ~ShmBackend() override;
  const char *Name() const override { return "shared memory"; }
  // Host buffers.
  Status Run(const CollArgs &a) override { return RunOn(a, nullptr, false, false); }
  // The device copies one call made (for the staging statistics).
  struct CopyCounts {
    size_t d2h = 0, d2h_bytes = 0, h2d = 0, h2d_bytes = 0;
  };
  // Buffers of which those on the device (send_dev, recv_dev) are memory of
  // `device`, copied through it on a.stream (finished before return);
  // `counts`, when given, gets the device copies made.
  Status RunOn(const CollArgs &a, DeviceRuntime *device, bool send_dev, bool recv_dev,
               CopyCounts *counts = nullptr);
  const char *Unsupported(const CollArgs &a) const override;

  // Whether `a` lands (see above): an AllReduce from and to memory of
  // `device` of kStageBytes at most, with the segment page-locked with it
  // (registered here at the first call), so both copies are asynchronous.
  // Each rank decides alone: a rank that does not land runs the staged
  // protocol, which serves landed peers (AllReduce).
  bool Lands(const CollArgs &a, DeviceRuntime *device, bool send_dev, bool recv_dev);
  // On the caller's thread, in call order: the copy into the landing area
  // on a.stream, after the copy out of the landed call before it (on
  // another stream: a wait for it queued on a.stream).
  Status LandIn(const CollArgs &a, DeviceRuntime *device);
  // The reduction of the landed call `a` (after LandIn's copy has run).
  Status RunLanded(const CollArgs &a) {
    if (failed()) return FailedError();
    return AllReduce(a, nullptr, true, true, nullptr, true);
  }
  // The copy out of the landing area into a.recvbuff on a.stream, after the
  // gate that RunLanded opens; `copy` false (the call was not queued):
  // only marks the landing area free once the stream has run LandIn's copy.
  Status LandOut(const CollArgs &a, DeviceRuntime *device, bool copy = true);
  // Waits of this rank end (InvalidUsage), and the peers' waits on it end
  // (RemoteError naming it): Leave.
  void Abort() override {
    aborted_.store(true, std::memory_order_relaxed);
    Leave(kLeftAborted);
  }
  // The same for infinicclCommRevoke and a failed two-level step (the
  // peers' message names the revoke): Backend::Revoke.
  void Revoke() override {
    aborted_.store(true, std::memory_order_relaxed);
    Leave(kLeftRevoked);
  }
  // Set when a wait of this rank found a peer gone (exited, killed, or left
  // the communicator): the ranks then no longer agree on where their calls
  // stand (each stopped at its own point of the failed call), so every
  // later call here returns that RemoteError at once, and this rank leaves
  // (kLeftFailed), which ends its peers' waits on it. Without it a later
  // call could wait forever on a live peer stopped at another point.
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // Whether the route takes `a` here rather than MPI: what is equal on every
  // rank only (kind, count, dtype, settings, and `devices`: every rank of
  // the communicator drives a device without a CCL), so all ranks decide
  // alike. INFINICCL_SHM=1: every call it supports; auto: calls whose
  // per-rank bytes are at most MaxBytes (measured, docs/PERFORMANCE.md).
  bool Takes(const CollArgs &a, bool devices) const;
  // Host buffers through MPI beat a copy in and out of the segment past
  // these; device buffers are copied through host memory either way, so
  // on communicators of devices without a CCL every size takes it.
  static size_t MaxBytes(CollKind kind, bool devices = false);
  // Bytes of each stage of a rank's region.
  static constexpr size_t kStageBytes = size_t{1} << 20;
  // A host AllReduce of more chunks than this copies its input into the
  // stages with streaming stores. Each stage is written again two chunks
  // after the other ranks read it, and a normal store to a line another
  // core still holds waits for that core to give it up: 2-3x the time
  // when the VM's two cores move data slowly. Smaller calls keep normal
  // stores, whose lines the other rank then reads from a shared cache
  // (docs/PERFORMANCE.md, "Shared memory on a node").
  static constexpr size_t kStreamFromChunks = 4;

 private:
  ShmBackend() = default;
  enum Phase { kArrived = 0, kReduced = 1, kDone = 2, kNumPhases = 3 };
  // Where rank `rank`'s input of one-chunk AllReduce `chunk` is, and where
  // its slice of the result goes: its landing area, or its stage.
  char *InputOf(int rank, uint32_t chunk, size_t window, bool landed) const;
  char *Landing(int rank) const;
  struct Control;
  Control *ControlOf(int rank) const;
  // Rank `rank`'s stage for `chunk` (two, alternating), `at` bytes in.
  char *Stage(int rank, uint32_t chunk, size_t at = 0) const;
  // Where in its stage a one-chunk AllReduce of `bytes` works: a window
  // that moves on with every call through the whole stage, so that the
  // lines a rank writes were last touched many calls ago and are no longer
  // in the other cores' caches (a write to a line another core holds waits
  // for that core to drop it). 0 (the stage's start) below
  // kRotateFromBytes, where the lines a call reuses stay in this core's
  // cache and fresh ones cost more, and above kRotateToBytes, where
  // windows measured no faster (docs/PERFORMANCE.md, "Shared memory on a
  // node").
  static size_t Window(size_t bytes, uint32_t chunk);
  static constexpr size_t kRotateFromBytes = size_t{32} << 10;
  static constexpr size_t kRotateToBytes = size_t{256} << 10;
  // Each call's descriptor (kind, count, dtype, op, root, this backend's
  // call number), written by Describe before the rank posts its arrival at
  // the call's first chunk `first`; Meet waits for every rank's arrival
  // there and compares. A difference: InvalidUsage on every rank, naming
  // the first field that differs and the ranks with each value (as
  // INFINICCL_CHECK), nothing read from another rank and every counter at
  // first + 1, where the next call starts on every rank.
  void Describe(const CollArgs &a, uint32_t first);
  Status Meet(const CollArgs &a, uint32_t first);
  // Why a rank left, in its control (0 while it stays): set at CommAbort,
  // CommRevoke, when a wait of the rank found a peer gone (MarkFailed), or
  // when the backend is destroyed, after the rank's last post, with every
  // sleeper on its counters woken.
  static constexpr uint32_t kLeftAborted = 1, kLeftDestroyed = 2, kLeftRevoked = 3,
                            kLeftFailed = 4;
  void Leave(uint32_t why);
  // A peer is gone (`why`, from Departed): failed() from here on, and Leave.
  void MarkFailed(const Status &why);
  // The RemoteError a call returns once failed().
  Status FailedError() const;
  // RemoteError naming `rank` when it left, or its process is gone (exited,
  // a zombie, or its pid now another process's: core/process_identity.h);
  // the pid is trusted only when the peer's pid namespace is this one's.
  Status Departed(int rank, const CollArgs &a) const;
  void Post(Phase phase, uint32_t value);
  // Posts `value` to every phase still below it: at the end of each chunk,
  // so a phase a collective does not use never falls behind (the counters
  // are compared wrapping, 2^31 chunks apart at most).
  void PostAll(uint32_t value);
  // Waits until every rank's counter of `phase` has reached `target`
  // (wrapping compare).
  Status WaitAll(Phase phase, uint32_t target, const CollArgs &a);
  Status WaitOne(int rank, Phase phase, uint32_t target, const CollArgs &a);

  Status AllReduce(const CollArgs &a, DeviceRuntime *dev, bool send_dev, bool recv_dev,
                   CopyCounts *counts, bool landed = false);
  Status ReduceScatter(const CollArgs &a, DeviceRuntime *dev, bool send_dev, bool recv_dev,
                             CopyCounts *counts);
  Status Reduce(const CollArgs &a, DeviceRuntime *dev, bool send_dev, bool recv_dev,
                      CopyCounts *counts);
  Status AllGather(const CollArgs &a, DeviceRuntime *dev, bool send_dev, bool recv_dev,
                         CopyCounts *counts);
  Status Broadcast(const CollArgs &a, DeviceRuntime *dev, bool send_dev, bool recv_dev,
                         CopyCounts *counts);

  // Page-locks the segment with `device` (first device call): its copies
  // into and out of the segment are then DMA, asynchronous both ways.
  // Whether the segment is page-locked with `device` (tried at the first
  // call, from the caller's or the engine's thread).
  bool RegisterWith(DeviceRuntime *device);

  std::unique_ptr<NodeSegment> segment_;
  std::mutex register_mutex_;
  DeviceRuntime *registered_with_ = nullptr;  // the runtime it is page-locked with
  bool register_tried_ = false;
  // Recorded behind each landed call's copy out (LandOut): the landing
  // area is free once it is reached. On the stream of landing_stream_.
  void *landing_free_ = nullptr;
  void *landing_stream_ = nullptr;
  int rank_ = 0, size_ = 1;
  uint32_t next_chunk_ = 0;  // the same on every rank: all take the same calls
  uint32_t call_seq_ = 0;    // calls made (Describe)
  struct Described {         // this call's descriptor, as Describe wrote it
    uint32_t seq = 0;
    int32_t kind_op = 0, dtype = 0, root = 0;
    uint64_t count = 0;
  } described_;
  int pid_ = 0;              // the process that made it
  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};
  mutable std::mutex failed_mutex_;
  std::string failed_why_;  // under failed_mutex_: the first peer found gone
  std::chrono::microseconds spin_{0};  // the first step of a wait (shm_backend.cpp)
  std::vector<const void *> sources_;  // one per rank, kept: no allocation per call
  std::vector<char> landed_;           // per rank: whether its one-chunk call landed
};

}  // namespace infiniccl
