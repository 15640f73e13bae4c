// The shared-memory channel: the segment among the ranks of a communicator
// that all share one node, laid out as one region per rank (control lines,
// two stages, a landing area), the counters the ranks post and wait on,
// each call's meeting (descriptors compared at its first chunk), and the
// ranks' liveness: CommAbort, CommRevoke, a peer that left or whose
// process is gone, and the failed state after one. A channel made over an
// Exchange (a communicator without MPI) also has the point-to-point area:
// one ring of slots per ordered pair of ranks and a bell per rank
// (shm_p2p.h). The collectives
// (shm_pipeline.h, coll/) read and write the regions and order themselves
// with Post and Wait only. The protocol: docs/architecture/shared-memory.md.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/coll_args.h"
#include "backend/shm/shm_wait.h"
#include "core/status.h"
#include "core/exchange.h"
#include "mpi/node_segment.h"

namespace infiniccl {
namespace shm {

// The counters of each rank, one per phase of a chunk: the rank's input of
// chunk g is in its stage (arrived = g + 1), its slice of the result is
// (reduced = g + 1), it has read every peer's stage of chunk g (done = g + 1).
enum Phase { kArrived = 0, kReduced = 1, kDone = 2, kNumPhases = 3 };

class Channel {
 public:
  // Bytes of a rank's landing area, of each chunk of a call on host
  // buffers, and of each stage of a channel without devices.
  static constexpr size_t kStageBytes = size_t{1} << 20;
  // Bytes of each stage of a channel whose ranks drive devices: calls on
  // device buffers staged through the stages take chunks of up to this, so
  // that a rank meets its peers at every 4 MiB, not every 1 MiB. Where other
  // processes share the cores, each meeting can cost a time slice: at 2 GB/s
  // emulated copies with two busy processes beside 2 ranks, 64 MiB took
  // 0.85 of MPI staging's time with these stages, 4.0 with 1 MiB ones.
  static constexpr size_t kDeviceStageBytes = size_t{4} << 20;

  // Collective over `comm`: a channel when every rank of `comm` is on this
  // node and the segment could be made on all of them, else null with *why.
  // `names`: the rank each rank of `comm` is in messages (empty: its rank
  // in `comm`). `devices`: whether this rank drives a device (its stages
  // are kDeviceStageBytes where any rank does, agreed). An error status
  // only for a failed MPI call.
  static Status Create(MPI_Comm comm, int rank, int size, std::vector<int> names, bool devices,
                       std::unique_ptr<Channel> *out, std::string *why);
  // The same over `ex`, whose every rank the caller knows to be on this
  // node (a communicator made through the bootstrap); no MPI call.
  // Its regions carry the point-to-point area (has_rings).
  static Status Create(Exchange &ex, std::vector<int> names, bool devices,
                       std::unique_ptr<Channel> *out, std::string *why);

  // The point-to-point area (shm_p2p.h): per rank, a bell, then one ring
  // per destination rank, written by this rank (the producer) and read by
  // the destination (the consumer). A ring is kRingSlots slots of
  // kSlotBytes; `head` counts the slots written, `tail` those read.
  static constexpr size_t kSlotBytes = size_t{64} << 10;
  static constexpr uint32_t kRingSlots = 8;
  struct RingView {
    std::atomic<uint32_t> *head;  // the producer's
    std::atomic<uint32_t> *tail;  // the consumer's
    char *slots;
  };
  bool has_rings() const { return rings_; }
  // The ring from rank `src` to rank `dst` (has_rings only).
  RingView Ring(int src, int dst) const;
  // This rank's bell: rung (incremented, sleepers woken) by a peer that
  // wrote into a ring to this rank or read from one of this rank's rings.
  uint32_t BellValue() const;
  void RingBell(int rank);
  // Waits until this rank's bell differs from `seen`, as WaitOne waits
  // (spin, poll, futex slices; this rank's Cancel ends it). A RemoteError
  // naming a peer (and this channel failed() from then on) when one of
  // `peers` left or its process is gone, or, `any_source`, every other
  // rank has.
  Status WaitBell(uint32_t seen, const std::vector<int> &peers, bool any_source,
                  const CollArgs &a);

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The rank messages name for rank `r` of the channel.
  int Name(int r) const { return names_.empty() ? r : names_[static_cast<size_t>(r)]; }
  const NodeSegment &segment() const { return *segment_; }

  // Rank `rank`'s stage for chunk `chunk` (two, alternating), `at` bytes in.
  char *Stage(int rank, uint32_t chunk, size_t at = 0) const;
  // Bytes of each chunk of a call of `bytes` (of each block's share, for
  // ReduceScatter's blocks) alike on every rank: kStageBytes for host
  // buffers; for device buffers staged through the stages (`staged`) half
  // the call in whole MiB, from kStageBytes to the stage: a call of 2 MiB
  // and more is at least two chunks, the copy in of one beside the copy out
  // of the other, and no more chunks than it needs (with four chunks, 4 MiB
  // at 2 GB/s with two busy processes beside 2 ranks took 1.54x MPI
  // staging's one chunk; with two, 0.86x).
  size_t ChunkBytes(size_t bytes, bool staged) const {
    if (!staged) return kStageBytes;
    const size_t half = (bytes / 2 + kStageBytes - 1) / kStageBytes * kStageBytes;
    return half < kStageBytes ? kStageBytes : half > stage_bytes_ ? stage_bytes_ : half;
  }
  // Rank `rank`'s landing area (kStageBytes).
  char *Landing(int rank) const;
  // Marks where this rank's input of the one-chunk AllReduce `chunk` is:
  // its landing area (`landed`) or its stage; before the rank's arrival.
  void MarkInput(uint32_t chunk, bool landed);
  // Whether rank `rank` marked its input of one-chunk AllReduce `chunk` as
  // landed (read after waiting for its arrival).
  bool InputLanded(int rank, uint32_t chunk) const;

  // The first of `chunks` chunk numbers for a call, the same on every rank.
  uint32_t Take(size_t chunks) {
    const uint32_t first = next_chunk_;
    next_chunk_ += static_cast<uint32_t>(chunks);
    return first;
  }
  void Post(Phase phase, uint32_t value);
  // Posts `value` to every phase still below it: at the end of each chunk,
  // so a phase a collective does not use never falls behind.
  void PostAll(uint32_t value);
  // Waits until rank `rank`'s counter of `phase` has reached `target`; a
  // RemoteError naming `rank` when it left or its process is gone (and this
  // channel is failed() from then on); after this rank's Cancel,
  // CancelledStatus.
  Status WaitOne(int rank, Phase phase, uint32_t target, const CollArgs &a);
  // InvalidUsage "aborted" after Cancel(kLeftAborted), RemoteError "revoked"
  // after Cancel(kLeftRevoked).
  Status CancelledStatus() const;
  // The same for every other rank.
  Status WaitAll(Phase phase, uint32_t target, const CollArgs &a);
  // Whether this rank's waits of the call about to run poll, yielding the
  // core, before they sleep (shm_wait.h): yes for calls on host buffers and
  // the landing, no for calls on device buffers staged through the stages.
  void PollBeforeSleep(bool poll) {
    poll_ = poll ? kPollBeforeSleep : std::chrono::microseconds(0);
  }

  // Each call's descriptor (kind, count, dtype, op, root, this channel's
  // call number), written by Describe before the rank posts its arrival at
  // the call's first chunk `first`; Meet waits for every rank's arrival
  // there and compares. A difference: InvalidUsage on every rank, naming
  // the first field that differs and the ranks with each value (as
  // INFINICCL_CHECK), nothing read from another rank and every counter at
  // first + 1, where the next call starts on every rank.
  void Describe(const CollArgs &a, uint32_t first);
  Status Meet(const CollArgs &a, uint32_t first);

  // Why a rank left, in its control (0 while it stays).
  static constexpr uint32_t kLeftAborted = 1, kLeftDestroyed = 2, kLeftRevoked = 3,
                            kLeftFailed = 4;
  // Waits of this rank end (CancelledStatus), and the peers' waits on it end
  // (RemoteError naming it, with `why`).
  void Cancel(uint32_t why) {
    uint32_t none = 0;
    cancelled_why_.compare_exchange_strong(none, why, std::memory_order_relaxed);
    aborted_.store(true, std::memory_order_release);
    Leave(why);
  }
  // Marks this rank gone for its peers (`why`), after its last post, with
  // every sleeper on its counters woken. Not in a child of fork().
  void Leave(uint32_t why);
  // Set when a wait of this rank found a peer gone: the ranks then no
  // longer agree on where their calls stand, so every later call returns
  // FailedError at once.
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  Status FailedError() const;
  // Appends the ranks (as Name gives them) whose process is gone: exited,
  // a zombie, or its pid now another process's (not a rank that merely
  // left the communicator).
  void GoneRanks(std::vector<int> *out) const;

 private:
  struct Control;
  Channel() = default;
  // Both Creates: `make` makes the segment of regions of the given bytes.
  using MakeSegment =
      std::function<Status(size_t region, std::unique_ptr<NodeSegment> *, std::string *)>;
  static Status CreateWith(Exchange &ex, const MakeSegment &make, std::vector<int> names,
                           bool devices, bool rings, std::unique_ptr<Channel> *out,
                           std::string *why);
  // The start of rank `rank`'s point-to-point area.
  char *P2pArea(int rank) const;
  Control *ControlOf(int rank) const;
  char *Region(int rank) const;
  // RemoteError naming `rank` when it left, or its process is gone (exited,
  // a zombie, or its pid now another process's: core/process_identity.h);
  // the pid is trusted only when the peer's pid namespace is this one's.
  Status Departed(int rank, const CollArgs &a) const;
  // A peer is gone (`why`, from Departed): failed() from here on, and Leave.
  void MarkFailed(const Status &why);

  std::unique_ptr<NodeSegment> segment_;
  int rank_ = 0, size_ = 1;
  size_t stage_bytes_ = kStageBytes;  // each stage: kStageBytes or kDeviceStageBytes
  bool rings_ = false;                // the regions carry the point-to-point area
  std::vector<int> names_;
  uint32_t next_chunk_ = 0;  // the same on every rank: all take the same calls
  uint32_t call_seq_ = 0;    // calls made (Describe)
  struct Described {         // this call's descriptor, as Describe wrote it
    uint32_t seq = 0;
    int32_t kind_op = 0, dtype = 0, root = 0;
    uint64_t count = 0;
  } described_;
  int pid_ = 0;  // the process that made it
  std::atomic<bool> aborted_{false};
  std::atomic<uint32_t> cancelled_why_{0};  // the first Cancel's `why`
  std::atomic<bool> failed_{false};
  mutable std::mutex failed_mutex_;
  std::string failed_why_;  // under failed_mutex_: the first peer found gone
  std::chrono::microseconds spin_{0};  // the first step of a wait (shm_wait.h)
  std::chrono::microseconds poll_{kPollBeforeSleep};  // its second step (PollBeforeSleep)
};

}  // namespace shm
}  // namespace infiniccl
