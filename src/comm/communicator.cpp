#include "comm/communicator.h"

#include <cstring>
#include <string>
#include <vector>

#include "backend/mpi/mpi_backend.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"
#include "core/config.h"
#include "core/log.h"
#include "comm/watchdog.h"
#include "staging/staging_pool.h"

namespace infiniccl {

// Everything after the MPI communicator exists: error handler, rank, size,
// backend, the node's sequence board, the watchdog. Collective over comm_
// (the board is shared memory among the node's ranks).
Status Communicator::FinishSetup() {
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN),
                                     "MPI_Comm_set_errhandler"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_size(comm_, &size_), "MPI_Comm_size"));
  MPI_Comm_set_name(comm_, "infiniccl");
  mpi_backend_ = std::make_unique<MpiBackend>(comm_, rank_, size_);
  INFINICCL_RETURN_IF_ERROR(AgreeOnCheck());
  std::string why;
  INFINICCL_RETURN_IF_ERROR(SeqBoard::Create(comm_, &board_, &why));
  if (!board_) {
    INFINICCL_INFO(
        "no node-local sequence board (%s): the watchdog will not be able to "
        "name ranks that have not reached a call",
        why.c_str());
  }
  Watchdog::Watch(this);
  return Status::Ok();
}

// INFINICCL_CHECK set on some ranks only would leave the checking ranks
// waiting in an exchange the others never make. One small Allgather at
// creation makes every rank check when any rank asked for it, with a
// warning that names the ranks.
Status Communicator::AgreeOnCheck() {
  const int mine = GlobalConfig().check ? 1 : 0;
  std::vector<int> all(static_cast<size_t>(size_), 0);
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm_), "MPI_Allgather"));
  std::string on, off;
  for (int r = 0; r < size_; ++r) {
    std::string &list = all[static_cast<size_t>(r)] ? on : off;
    list += (list.empty() ? "" : ",") + std::to_string(r);
  }
  check_ = !on.empty();
  if (!on.empty() && !off.empty() && rank_ == 0) {
    INFINICCL_WARN(
        "INFINICCL_CHECK differs between the ranks of a new communicator "
        "(1 on rank %s, 0 on rank %s): the check is on for this communicator "
        "on every rank; set it alike everywhere",
        on.c_str(), off.c_str());
  }
  return Status::Ok();
}

Status Communicator::Create(MPI_Comm parent, std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c(new Communicator());
  mpi::SerialLock lock;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_dup(parent, &c->comm_), "MPI_Comm_dup"));
  INFINICCL_RETURN_IF_ERROR(c->FinishSetup());
  *out = std::move(c);
  return Status::Ok();
}

Status Communicator::CreateWithoutMpi(int rank, int size,
                                      std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = rank;
  c->size_ = size;
  *out = std::move(c);
  return Status::Ok();
}

Status Communicator::Split(const Communicator &parent, int color, int key,
                           std::unique_ptr<Communicator> *out) {
  if (!parent.has_mpi()) {
    // Made by infinicclCommInitRank: only its CCL can split it, and the
    // child's place comes from the CCL (ncclCommUserRank / ncclCommCount).
    if (parent.ccl_backend_ == nullptr) {
      return Status(infinicclInternalError, "communicator with neither MPI nor a CCL");
    }
    int rank = -1, size = 0;
    std::unique_ptr<Backend> backend;
    Status st = parent.ccl_backend_->SplitNative(color, key, &rank, &size, &backend);
    if (!st.ok()) {
      return Status(st.code(),
                    "splitting a communicator made without MPI (infinicclCommInitRank) "
                    "takes the CCL's own split: " +
                        st.message());
    }
    if (backend == nullptr) return Status::Ok();  // no color: no communicator
    INFINICCL_RETURN_IF_ERROR(CreateWithoutMpi(rank, size, out));
    (*out)->binding_ = parent.binding_;
    (*out)->set_ccl_backend(std::move(backend));
    return Status::Ok();
  }
  std::unique_ptr<Communicator> c(new Communicator());
  mpi::SerialLock lock;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Comm_split(parent.comm_, color < 0 ? MPI_UNDEFINED : color, key, &c->comm_),
      "MPI_Comm_split"));
  if (c->comm_ == MPI_COMM_NULL) return Status::Ok();  // no color: no communicator
  INFINICCL_RETURN_IF_ERROR(c->FinishSetup());
  // Same process, same device: the binding is copied, not redone (SetDevice
  // already ran for the parent). The staging pool is process-wide, so the
  // child shares it as it is.
  c->binding_ = parent.binding_;
  // The parent's CCL communicator is split by infinicclCommSplit afterwards
  // (ccl_attach: ncclCommSplit where the CCL has it, else a CCL communicator
  // of the child's own, made the way CommInitAll makes one).
  *out = std::move(c);
  return Status::Ok();
}

Communicator::~Communicator() {
  Watchdog::Unwatch(this);
  ccl_backend_.reset();  // first: destroying it waits for its queued work
  StagingPool::Global().ReleaseOwner(this);
  int finalized = 1;
  MPI_Finalized(&finalized);
  // An aborted communicator's MPI communicator is left to MPI_Finalize:
  // freeing it is collective and its peers may never join.
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
  inflight_.path.store(static_cast<int>(CallPath::kNone), std::memory_order_relaxed);
  inflight_.token.store(++calls_, std::memory_order_release);
  if (board_ && call_seq != 0) board_->Enter(call_seq, static_cast<int>(a.kind));
}

bool Communicator::FirstUse(int bit) {
  const unsigned long long mask = 1ull << bit;
  if (announced_.load(std::memory_order_relaxed) & mask) return false;
  return (announced_.fetch_or(mask) & mask) == 0;
}

}  // namespace infiniccl
