// Communicator: what an infinicclComm_t names. Built in one place,
// comm/comm_init.h. Owns its MPI communicator and
// backends (MPI always when made under MPI; a native CCL when its ranks are
// bound to devices that have one); keeps the message of its last failed
// call, the sequence number of its collectives, what is in flight, and
// whether it was aborted (infinicclCommAbort).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "backend/backend.h"
#include "backend/shm/shm_backend.h"
#include "comm/binding.h"
#include "core/coll_args.h"
#include "comm/seq_board.h"
#include "core/status.h"
#include "device/device_runtime.h"
#include "hier/topology.h"
#include "progress/engine.h"
#include "staging/staging_pool.h"
#include "progress/inflight.h"

namespace infiniccl {

// The calls that make or end a communicator from this one, watched as a
// collective is (Communicator::CommCallGuard): kinds the watchdog and the
// node's board record beside the CollKind values, above them.
enum class CommCall { kSplit = 100, kShrink, kGrow, kDestroy };
// "CommSplit", ...; nullptr for a value that is not a CommCall.
const char *CommCallName(int kind);

class Communicator {
 public:
  // Made only by comm/comm_*.cpp (CommFactory, comm/comm_attach.h).
  ~Communicator();
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm mpi_comm() const { return comm_; }
  // Only when has_mpi().
  Backend &mpi_backend() { return *mpi_backend_; }
  bool has_mpi() const { return mpi_backend_ != nullptr; }
  // The native CCL communicator of this communicator's devices, or nullptr.
  Backend *ccl_backend() { return ccl_backend_.get(); }
  void set_ccl_backend(std::unique_ptr<Backend> b) { ccl_backend_ = std::move(b); }
  // Shared memory among the ranks, when all are on this node
  // (INFINICCL_SHM), or nullptr.
  ShmBackend *shm_backend() { return shm_backend_.get(); }

  // Groups and leaders (hier/topology.h); null when the communicator was
  // made without MPI. hierarchical() when the two-level path is on.
  Topology *topology() { return topology_.get(); }
  const Topology *topology() const { return topology_.get(); }
  void set_topology(std::unique_ptr<Topology> t) { topology_ = std::move(t); }
  bool hierarchical() const { return topology_ != nullptr && topology_->hierarchical; }

  // The device this rank drives (kind kCpu and device -1 when none).
  struct Binding {
    DeviceKind kind = DeviceKind::kCpu;
    int device = -1;
    bool shared = false;  // another local rank drives the same device
    LocalRank local_rank;
  };
  const Binding &binding() const { return binding_; }
  void set_binding(Binding b) { binding_ = std::move(b); }

  void SetLastError(const std::string &message);
  // Valid until the next SetLastError on this communicator.
  const char *LastError() const;

  // Sequence number of collective calls on this communicator (Send/Recv are
  // point-to-point and not counted): the api layer takes the next one once
  // per collective call that got past the handle check, rejected arguments
  // and count 0 included, so every rank numbers the same call alike even
  // when one rank's arguments are bad. Used by the watchdog and
  // INFINICCL_CHECK; atomic because CommAbort reads it from another thread.
  uint64_t NextSeq() { return seq_.fetch_add(1, std::memory_order_relaxed) + 1; }
  uint64_t seq() const { return seq_.load(std::memory_order_relaxed); }

  // Calls in progress on this communicator, counted so that infinicclCommAbort
  // can tell whether one is blocked. Enter() refuses once aborted.
  class CallGuard {
   public:
    CallGuard() = default;
    ~CallGuard();
    CallGuard(const CallGuard &) = delete;
    CallGuard &operator=(const CallGuard &) = delete;

   private:
    friend class Communicator;
    Communicator *comm_ = nullptr;
  };
  Status Enter(const char *function, CallGuard *guard);
  int calls_in_flight() const { return in_flight_.load(); }
  // The function of the last call entered (for the abort report).
  const char *last_call() const { return last_call_.load(); }

  // infinicclCommAbort: refuse new calls, and leave the MPI communicator to
  // infinicclFinalize (FreeLeftMpiComms): an aborted communicator may have
  // ranks that still use it.
  void MarkAborted();
  bool aborted() const { return aborted_.load(); }

  // What is in flight, for the watchdog: Begin publishes the call (`seq` 0
  // for Send/Recv) and records this rank's arrival on the node's SeqBoard;
  // End marks the communicator idle. A few relaxed stores, no allocation.
  void BeginCall(const CollArgs &a, uint64_t call_seq);
  void EndCall() { inflight_.End(); }
  // Collective `call_seq` returned `result` on this rank (on the board, so
  // the watchdog can tell a rank that returned early from one inside).
  void NoteReturned(uint64_t call_seq, int result) {
    if (board_ && call_seq != 0) board_->Returned(call_seq, result);
  }
  // This rank no longer takes part (destroyed, aborted, finalised): on the
  // board, so the watchdog of a rank still waiting can say so.
  void NoteLeft(SeqBoard::Left why) {
    if (board_) board_->Leave(why);
  }
  InFlight &inflight() { return inflight_; }

  // A CommCall on this communicator, numbered and published as a collective
  // is (every rank that takes part takes the next sequence number), so that
  // the watchdog names the ranks that have not arrived when it waits too
  // long; Returned records its result on the node's board.
  class CommCallGuard {
   public:
    CommCallGuard(Communicator &c, CommCall call);
    ~CommCallGuard() { c_.EndCall(); }
    CommCallGuard(const CommCallGuard &) = delete;
    CommCallGuard &operator=(const CommCallGuard &) = delete;
    void Returned(const Status &st) { c_.NoteReturned(seq_, static_cast<int>(st.code())); }

   private:
    Communicator &c_;
    uint64_t seq_;
  };

  // The progress engine (progress/engine.h): whether calls on device buffers
  // of `device` that go through MPI are queued to it (INFINICCL_ASYNC, MPI
  // at MPI_THREAD_MULTIPLE, the runtime has gates; decided at creation),
  // and the engine itself, started by the first such call.
  bool QueuesFor(DeviceRuntime &device) { return async_ && device.GateMechanism() != nullptr; }
  // Queues `op` to the engine, starting the engine at the first call; once
  // SealEngine has run, an engine that had not started never starts and
  // the call returns InvalidUsage "aborted".
  Status Enqueue(QueuedOp op);
  // infinicclCommAbort: the engine, or nullptr when none started; none
  // starts afterwards (under the lock that starts it), so the engine the
  // abort cancels is every engine the communicator has.
  ProgressEngine *SealEngine();
  // Null until the first queued call.
  ProgressEngine *engine_if_started() { return engine_.load(std::memory_order_acquire); }
  // Waits for the queued work (a call that runs on this thread next must
  // reach MPI after it); the engine's error, or Ok.
  Status DrainQueued() {
    ProgressEngine *e = engine_if_started();
    if (e == nullptr) return Status::Ok();
    Status st = e->Drain();
    // What the engine could not free (staging_pool.h), now that it is idle.
    StagingPool::Global().FreeDeferred();
    return st;
  }
  // Where a caller's thread makes an MPI call on this communicator: its
  // queued work must have reached MPI before (DrainQueued), or the engine's
  // MPI call and this one could meet other calls on the other ranks.
  // InternalError naming `mpi_call` otherwise; one atomic load.
  Status CheckDrained(const char *mpi_call) {
    ProgressEngine *e = engine_if_started();
    if (e == nullptr || !e->Busy()) return Status::Ok();
    return MakeStatus(infinicclInternalError,
                      "%s from a caller's thread while queued device work on the "
                      "communicator has not finished (it must be drained first)",
                      mpi_call);
  }
  // The error of queued work that failed (sticky), or Ok: one atomic load
  // while nothing failed.
  Status QueuedError() {
    ProgressEngine *e = engine_if_started();
    return e == nullptr || !e->failed() ? Status::Ok() : e->Error();
  }
  const SeqBoard *board() const { return board_.get(); }

  // INFINICCL_CHECK for this communicator: agreed by its ranks when it was
  // made (on if any rank had it on), so no rank waits in a check exchange
  // its peers never make.
  bool check() const { return check_; }
  // INFINICCL_CHECK found that a rank destroyed the communicator while
  // others were in a collective: its ranks no longer agree on what comes
  // next, so no exchange is attempted on it again (calls are refused with
  // this message, CommDestroy releases it locally) and its MPI communicator
  // is not freed (that is collective).
  void MarkDiverged(const std::string &why);
  bool diverged() const { return diverged_.load(); }
  std::string diverged_why() const;

  // infinicclCommRevoke, or a shrink that aborts: later calls are refused
  // (RemoteError), what is in flight is cancelled, and, as a diverged
  // communicator, it is released locally (its MPI communicator not freed).
  void MarkRevoked() { revoked_.store(true); }
  bool revoked() const { return revoked_.load(); }

  // infinicclCommShrink was called on it: the ranks it excluded take no
  // part in what comes on it, so CommDestroy's check exchange (over every
  // rank) is skipped.
  void MarkShrunk() { shrunk_.store(true); }
  bool shrunk() const { return shrunk_.load(); }

  // The process that made the communicator: the only one whose calls on it
  // are served (a child of fork() shares the parent's memory image, not its
  // place among the ranks).
  int creator_pid() const { return creator_pid_; }
  static int CurrentPid();
  // The MPI communicators of aborted, diverged and revoked communicators:
  // not freed when those go (their peers may still use their side), but by
  // infinicclFinalize just before MPI_Finalize, when no call can use them.
  // MPI_Comm_free only marks a communicator for deallocation once what is
  // pending on it completes, and no Open MPI or MPICH implementation
  // communicates there; left to MPI_Finalize, their memory leaks.
  static void FreeLeftMpiComms();

  // The infinicclComm_t value naming this communicator (0 before Register).
  uintptr_t handle() const { return handle_; }
  void set_handle(uintptr_t h) { handle_ = h; }

  // Bit per (CollKind, path) already announced at INFO, so the route of each
  // kind of call is logged once, not per call.
  bool FirstUse(int bit);

  // Open groups (of any thread) holding operations on this communicator;
  // CommDestroy is refused while there are any.
  void AddGroupUser() { group_users_.fetch_add(1); }
  void RemoveGroupUser() { group_users_.fetch_sub(1); }
  int group_users() const { return group_users_.load(); }

 private:
  friend class CommFactory;
  Communicator() = default;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 0;
  std::unique_ptr<Backend> mpi_backend_;
  std::unique_ptr<ShmBackend> shm_backend_;  // outlives the engine, which may run on it
  std::unique_ptr<Backend> ccl_backend_;  // destroyed first (declared last of the two)
  std::unique_ptr<Topology> topology_;
  Binding binding_;
  mutable std::mutex error_mutex_;
  std::string last_error_;
  std::atomic<unsigned long long> announced_[2] = {0, 0};
  std::atomic<uint64_t> seq_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<bool> aborted_{false};
  std::atomic<const char *> last_call_{""};
  std::atomic<int> group_users_{0};
  bool check_ = false;
  std::atomic<bool> diverged_{false};
  std::atomic<bool> revoked_{false};
  std::atomic<bool> shrunk_{false};
  std::string diverged_why_;  // under error_mutex_
  uint64_t calls_ = 0;  // InFlight tokens, collectives and Send/Recv alike
  InFlight inflight_;
  bool async_ = false;
  std::mutex engine_mutex_;
  bool engine_sealed_ = false;  // under engine_mutex_: SealEngine ran
  std::unique_ptr<ProgressEngine> engine_owner_;  // destroyed (drained) first, see ~
  std::atomic<ProgressEngine *> engine_{nullptr};
  std::unique_ptr<SeqBoard> board_;  // null: shared memory unavailable
  uintptr_t handle_ = 0;
  int creator_pid_ = CurrentPid();
};

}  // namespace infiniccl
