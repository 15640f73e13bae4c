// ShmBackend: collectives among the ranks of a communicator that all share
// one node, through a shared-memory segment (mpi/node_segment.h) instead of
// MPI's transport: each rank copies its part into its own region of the
// segment, the ranks reduce in place there (each its own slice, over every
// rank's copy), and each copies the results out. MPI is not called at all.
//
// AllReduce, ReduceScatter, Reduce, AllGather, Broadcast, Gather, Scatter
// and AllToAll (every collective), and on a communicator made without MPI
// Send and Recv too (shm_p2p.h; with MPI they go to MPI); every dtype and
// op (float16 and bfloat16 reduced in float). Buffers of any size run in
// chunks through two stages per rank, so a rank copies chunk k+1 in while
// slower ranks still read chunk k (a large AllReduce with streaming
// stores). Buffers in device memory (the staged path of a device without a
// CCL) are copied by the device runtime straight into and out of the
// segment; the segment is page-locked with that runtime when the
// communicator is made on a device, else at the first such call
// (cudaHostRegister and its kin, portable: for every device).
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
// control) and a peer process that is gone (Departed);
// docs/architecture/shared-memory.md.
//
// The files: shm_channel.h (the segment's layout, the counters, post and
// wait, the meeting, departures and the failed state; its waits in
// shm_wait.h), shm_pipeline.h (where buffers live, the copies, the chunk
// skeleton), shm_landing.h (the landing area's copies and their event),
// coll/ (one collective each), shm_p2p.h (Send and Recv), and this backend, which page-locks the
// segment and hands each call to its collective.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/shm/shm_channel.h"
#include "backend/shm/shm_landing.h"
#include "backend/shm/shm_p2p.h"
#include "backend/shm/shm_pipeline.h"
#include "device/device_runtime.h"
#include "mpi/node_segment.h"

namespace infiniccl {

class ShmBackend final : public Backend {
 public:
  // Collective over `comm`: a backend when every rank of `comm` is on this
  // node and the segment could be made on all of them, else null with *why.
  // `names`: the rank each rank of `comm` is in messages (a group's
  // communicator names its ranks in the parent's; empty: its own ranks).
  // `devices`: whether this rank drives a device (Channel::Create). An
  // error status only for a failed MPI call.
  static Status Create(MPI_Comm comm, int rank, int size, bool devices,
                       std::unique_ptr<ShmBackend> *out, std::string *why,
                       std::vector<int> names = {});
  // The same over `ex`, every rank of which is on this node (a
  // communicator made through the bootstrap); no MPI call.
  static Status Create(Exchange &ex, bool devices, std::unique_ptr<ShmBackend> *out,
                       std::string *why);

  ~ShmBackend() override;
  const char *Name() const override { return "shared memory"; }
  // Host buffers.
  Status Run(const CollArgs &a) override { return RunOn(a, nullptr, false, false); }
  // The device copies one call made (for the staging statistics).
  using CopyCounts = shm::CopyCounts;
  // Buffers of which those on the device (send_dev, recv_dev) are memory of
  // `device`, copied through it on a.stream (finished before return);
  // `counts`, when given, gets the device copies made.
  Status RunOn(const CollArgs &a, DeviceRuntime *device, bool send_dev, bool recv_dev,
               CopyCounts *counts = nullptr);
  const char *Unsupported(const CollArgs &a) const override;
  // Grouped Send/Recv (a channel with rings only; else nullptr).
  std::unique_ptr<P2pBatch> NewP2pBatch() override;

  // Whether `a` lands (see above): an AllReduce from and to memory of
  // `device` of kStageBytes at most, with the segment page-locked with it
  // (registered here at the first call), so both copies are asynchronous.
  // Each rank decides alone: a rank that does not land runs the staged
  // protocol, which serves landed peers (AllReduce).
  bool Lands(const CollArgs &a, DeviceRuntime *device, bool send_dev, bool recv_dev);
  // On the caller's thread, in call order: the copy into the landing area
  // on a.stream (shm::Landing::In).
  Status LandIn(const CollArgs &a, DeviceRuntime *device) { return landing_->In(a, device); }
  // The reduction of the landed call `a` (after LandIn's copy has run).
  Status RunLanded(const CollArgs &a) {
    if (failed()) return channel_->FailedError();
    return RunAt(a, shm::Place::kDeviceLanded, shm::Place::kDeviceLanded, nullptr, nullptr);
  }
  // The copy out of the landing area into a.recvbuff on a.stream, after the
  // gate that RunLanded opens; `copy` false (the call was not queued):
  // only marks the landing area free once the stream has run LandIn's copy.
  Status LandOut(const CollArgs &a, DeviceRuntime *device, bool copy = true) {
    return landing_->Out(a, device, copy);
  }
  // Waits of this rank end (InvalidUsage), and the peers' waits on it end
  // (RemoteError naming it).
  void Abort() override { channel_->Cancel(shm::Channel::kLeftAborted); }
  // The same for infinicclCommRevoke and a failed two-level step, this
  // rank's waits ending with RemoteError "revoked" (the peers' message
  // names the revoke): Backend::Revoke.
  void Revoke() override { channel_->Cancel(shm::Channel::kLeftRevoked); }
  // Set when a wait of this rank found a peer gone (exited, killed, or left
  // the communicator): the ranks then no longer agree on where their calls
  // stand (each stopped at its own point of the failed call), so every
  // later call here returns that RemoteError at once, and this rank leaves
  // (kLeftFailed), which ends its peers' waits on it. Without it a later
  // call could wait forever on a live peer stopped at another point.
  bool failed() const { return channel_->failed(); }
  // Appends the ranks of the node whose process is gone (shm::Channel).
  void GoneRanks(std::vector<int> *out) const { channel_->GoneRanks(out); }

  // Whether the route takes `a` here rather than MPI: what is equal on every
  // rank only (kind, count, dtype, settings, and `devices`: every rank of
  // the communicator drives a device without a CCL), so all ranks decide
  // alike. INFINICCL_SHM=1: every call it supports; auto: calls whose
  // count x element size (a rank's block; AllToAll's: each of its blocks)
  // is at most MaxBytes (measured, docs/PERFORMANCE.md).
  bool Takes(const CollArgs &a, bool devices) const;
  // Host buffers through MPI beat a copy in and out of the segment past
  // these; device buffers are copied through host memory either way, so
  // on communicators of devices without a CCL every size takes it.
  static size_t MaxBytes(CollKind kind, bool devices = false);
  // Bytes of each stage of a rank's region.
  static constexpr size_t kStageBytes = shm::Channel::kStageBytes;

  // Whether the segment is page-locked with `device`, for every device of
  // it (portable): its copies into and out of the segment are then DMA,
  // asynchronous both ways. Tried once: at the communicator's creation with
  // the runtime of the device it is bound to, else at the first device
  // call (from the caller's or the engine's thread).
  bool RegisterWith(DeviceRuntime *device);

 private:
  ShmBackend() = default;
  // Both Creates, once the channel is made (null: none).
  static void Wrap(std::unique_ptr<shm::Channel> channel, std::unique_ptr<ShmBackend> *out);
  // One call, its buffers where `send` and `recv` say.
  Status RunAt(const CollArgs &a, shm::Place send, shm::Place recv, DeviceRuntime *device,
               CopyCounts *counts);
  // One blocking Send or Recv; a device buffer staged through host memory.
  Status RunP2p(const CollArgs &a, DeviceRuntime *device, bool on_device, CopyCounts *counts);

  std::unique_ptr<shm::Channel> channel_;
  std::unique_ptr<shm::Landing> landing_;  // this rank's landing area
  std::unique_ptr<shm::P2p> p2p_;          // with the channel's rings only
  shm::Scratch scratch_;
  std::mutex register_mutex_;
  DeviceRuntime *registered_with_ = nullptr;  // the runtime it is page-locked with
  bool register_tried_ = false;
};

}  // namespace infiniccl
