#include "comm/communicator.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "comm/watchdog.h"
#include "mpi/mpi_thread.h"
#include "staging/staging_pool.h"

namespace infiniccl {

namespace {
// This process's pid, kept: getpid() is a system call, and every call on a
// communicator asks (Runtime::Lookup). A child of fork() sets its own.
std::atomic<int> g_pid{0};
void NotePid() { g_pid.store(static_cast<int>(getpid()), std::memory_order_relaxed); }

std::mutex g_left_mutex;
std::vector<MPI_Comm> g_left;  // Communicator::FreeLeftMpiComms

void LeaveToFinalize(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  std::lock_guard<std::mutex> lock(g_left_mutex);
  g_left.push_back(comm);
}
}  // namespace

void Communicator::FreeLeftMpiComms() {
  std::vector<MPI_Comm> left;
  {
    std::lock_guard<std::mutex> lock(g_left_mutex);
    left.swap(g_left);
  }
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (finalized) return;
  mpi::SerialLock lock;
  for (MPI_Comm &c : left) MPI_Comm_free(&c);
}

int Communicator::CurrentPid() {
  static const bool registered = [] {
    NotePid();
    pthread_atfork(nullptr, nullptr, NotePid);
    return true;
  }();
  (void)registered;
  return g_pid.load(std::memory_order_relaxed);
}

Communicator::~Communicator() {
  // Queued work first (as ncclCommDestroy): it uses everything below, and
  // the watchdog still watches it meanwhile. An aborted communicator's
  // engine was cancelled and started nothing; it may still wait for a
  // stream held by a long kernel, so it goes on a thread of its own, with
  // the two-level scratch (freeing device memory waits for the device).
  if (engine_owner_ && !aborted()) engine_owner_->Drain();
  Watchdog::Unwatch(this);
  engine_.store(nullptr);
  if (aborted()) {
    // The shared-memory segment with them, after the engine: device copies
    // of a landed call into and out of it may wait on the caller's stream
    // behind that kernel; it is unmapped (and its page-locking undone) once
    // they have run (~ShmBackend).
    std::shared_ptr<Topology> topology = std::move(topology_);
    std::shared_ptr<ShmBackend> shm = std::move(shm_backend_);
    if (engine_owner_ || topology) {
      ProgressEngine::DestroyLater(std::move(engine_owner_),
                                   [topology = std::move(topology), shm = std::move(shm)] {});
    }
    ccl_backend_.reset();
    LeaveToFinalize(comm_);
    comm_ = MPI_COMM_NULL;
    return;  // the pool's idle buffers stay for MemTrim or Finalize to free
  }
  engine_owner_.reset();
  ccl_backend_.reset();  // first: destroying it waits for its queued work
  StagingPool::Global().ReleaseOwner(this);
  int finalized = 1;
  MPI_Finalized(&finalized);
  // A diverged or revoked communicator's MPI communicator is left to
  // infinicclFinalize (FreeLeftMpiComms): its peers may still use it.
  const bool collective_free = !finalized && !aborted() && !diverged() && !revoked();
  if (topology_) topology_->Release(collective_free);
  if (comm_ != MPI_COMM_NULL && collective_free) {
    mpi::ForgetRevoked(comm_);
    mpi::SerialLock lock;
    MPI_Comm_free(&comm_);
  } else if (!finalized) {
    LeaveToFinalize(comm_);
    comm_ = MPI_COMM_NULL;
  }
}

Communicator::CallGuard::~CallGuard() {
  if (comm_ != nullptr) comm_->in_flight_.fetch_sub(1);
}

Status Communicator::Enter(const char *function, CallGuard *guard) {
  // Counted before the flag is read, and MarkAborted sets the flag before
  // reading the count (both sequentially consistent): an abort racing this
  // call either sees it in flight or this call sees the abort.
  in_flight_.fetch_add(1);
  if (aborted_.load()) {
    in_flight_.fetch_sub(1);
    return Status(infinicclInvalidUsage,
                  "the communicator was aborted (infinicclCommAbort); create a new one");
  }
  if (revoked_.load()) {
    in_flight_.fetch_sub(1);
    return Status(infinicclRemoteError,
                  "the communicator was revoked (infinicclCommRevoke, or a shrink that "
                  "aborted it); shrink it or destroy it");
  }
  last_call_.store(function);
  guard->comm_ = this;
  return Status::Ok();
}

void Communicator::MarkAborted() {
  aborted_.store(true);
}

void Communicator::MarkDiverged(const std::string &why) {
  std::lock_guard<std::mutex> lock(error_mutex_);
  if (diverged_.load()) return;  // the first reason is the one that matters
  diverged_why_ = why;
  diverged_.store(true);
}

std::string Communicator::diverged_why() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return diverged_why_;
}

void Communicator::SetLastError(const std::string &message) {
  std::lock_guard<std::mutex> lock(error_mutex_);
  last_error_ = message;
}

const char *Communicator::LastError() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return last_error_.c_str();
}

const char *CommCallName(int kind) {
  switch (kind) {
    case static_cast<int>(CommCall::kSplit): return "CommSplit";
    case static_cast<int>(CommCall::kShrink): return "CommShrink";
    case static_cast<int>(CommCall::kGrow): return "CommGrow";
    case static_cast<int>(CommCall::kDestroy): return "CommDestroy";
    default: return nullptr;
  }
}

Communicator::CommCallGuard::CommCallGuard(Communicator &c, CommCall call)
    : c_(c), seq_(c.NextSeq()) {
  CollArgs a{};
  a.kind = static_cast<CollKind>(call);
  a.dtype = infinicclInt8;
  a.op = infinicclSum;
  c.BeginCall(a, seq_);
}

void Communicator::BeginCall(const CollArgs &a, uint64_t call_seq) {
  inflight_.Publish(a, call_seq, ++calls_);
  if (board_ && call_seq != 0) board_->Enter(call_seq, static_cast<int>(a.kind));
}

Status Communicator::Enqueue(QueuedOp op) {
  ProgressEngine *e = engine_.load(std::memory_order_acquire);
  if (e == nullptr) {
    std::lock_guard<std::mutex> lock(engine_mutex_);
    if (!engine_owner_) {
      if (engine_sealed_) {
        return Status(infinicclInvalidUsage,
                      "the communicator was aborted (infinicclCommAbort)");
      }
      char name[96];
      std::snprintf(name, sizeof name, "comm %#llx (rank %d of %d)",
                    static_cast<unsigned long long>(handle_), rank_, size_);
      engine_owner_ = std::make_unique<ProgressEngine>(name);
      engine_.store(engine_owner_.get(), std::memory_order_release);
    }
    e = engine_owner_.get();
  }
  // A started engine that an abort cancelled skips what is queued after.
  return e->Enqueue(std::move(op));
}

ProgressEngine *Communicator::SealEngine() {
  std::lock_guard<std::mutex> lock(engine_mutex_);
  engine_sealed_ = true;
  return engine_owner_.get();
}

bool Communicator::FirstUse(int bit) {
  std::atomic<unsigned long long> &word = announced_[bit / 64];
  const unsigned long long mask = 1ull << (bit % 64);
  if (word.load(std::memory_order_relaxed) & mask) return false;
  return (word.fetch_or(mask) & mask) == 0;
}

}  // namespace infiniccl
