#include "comm/communicator.h"

#include <cstring>
#include <string>

#include "comm/watchdog.h"
#include "mpi/mpi_thread.h"
#include "staging/staging_pool.h"

namespace infiniccl {

Communicator::~Communicator() {
  Watchdog::Unwatch(this);
  ccl_backend_.reset();  // first: destroying it waits for its queued work
  StagingPool::Global().ReleaseOwner(this);
  int finalized = 1;
  MPI_Finalized(&finalized);
  // An aborted communicator's MPI communicator is left to MPI_Finalize:
  // freeing it is collective and its peers may never join.
  if (topology_) topology_->Release(!finalized && !aborted() && !diverged());
  if (comm_ != MPI_COMM_NULL && !finalized && !aborted() && !diverged()) {
    mpi::SerialLock lock;
    MPI_Comm_free(&comm_);
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

void Communicator::BeginCall(const CollArgs &a, uint64_t call_seq) {
  // Raw bits: the call is published before validation, so a C caller's
  // out-of-range dtype/op may be here, which the enum type cannot hold.
  int dtype, op;
  std::memcpy(&dtype, &a.dtype, sizeof dtype);
  std::memcpy(&op, &a.op, sizeof op);
  // Seqlock writer: idle (token 0) before the description changes, then
  // the new token once it is complete.
  inflight_.token.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  inflight_.seq.store(call_seq, std::memory_order_relaxed);
  inflight_.count.store(a.count, std::memory_order_relaxed);
  inflight_.kind.store(static_cast<int>(a.kind), std::memory_order_relaxed);
  inflight_.dtype.store(dtype, std::memory_order_relaxed);
  inflight_.op.store(op, std::memory_order_relaxed);
  inflight_.root.store(a.root, std::memory_order_relaxed);
  inflight_.path.store(static_cast<int>(Path::kNone), std::memory_order_relaxed);
  inflight_.token.store(++calls_, std::memory_order_release);
  if (board_ && call_seq != 0) board_->Enter(call_seq, static_cast<int>(a.kind));
}

bool Communicator::FirstUse(int bit) {
  const unsigned long long mask = 1ull << bit;
  if (announced_.load(std::memory_order_relaxed) & mask) return false;
  return (announced_.fetch_or(mask) & mask) == 0;
}

}  // namespace infiniccl
