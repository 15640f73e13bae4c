#include "core/communicator.h"

#include "backend/mpi/mpi_backend.h"
#include "backend/mpi/mpi_error.h"
#include "core/log.h"
#include "core/watchdog.h"
#include "staging/staging_pool.h"

namespace infiniccl {

Status Communicator::Create(MPI_Comm parent, std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c(new Communicator());
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_dup(parent, &c->comm_), "MPI_Comm_dup"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Comm_set_errhandler(c->comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_rank(c->comm_, &c->rank_), "MPI_Comm_rank"));
  INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_size(c->comm_, &c->size_), "MPI_Comm_size"));
  MPI_Comm_set_name(c->comm_, "infiniccl");
  c->mpi_backend_ = std::make_unique<MpiBackend>(c->comm_, c->rank_, c->size_);
  std::string why;
  INFINICCL_RETURN_IF_ERROR(SeqBoard::Create(c->comm_, &c->board_, &why));
  if (!c->board_) {
    INFINICCL_INFO("no node-local sequence board (%s): the watchdog will not be able to "
                   "name ranks that have not reached a call",
                   why.c_str());
  }
  Watchdog::Watch(c.get());
  *out = std::move(c);
  return Status::Ok();
}

Status Communicator::CreateWithoutMpi(int rank, int size, std::unique_ptr<Communicator> *out) {
  std::unique_ptr<Communicator> c(new Communicator());
  c->rank_ = rank;
  c->size_ = size;
  *out = std::move(c);
  return Status::Ok();
}

Communicator::~Communicator() {
  Watchdog::Unwatch(this);
  ccl_backend_.reset();  // first: destroying it waits for its queued work
  StagingPool::Global().ReleaseOwner(this);
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
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
  // Seqlock writer: idle (token 0) before the description changes, then
  // the new token once it is complete.
  inflight_.token.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  inflight_.seq.store(call_seq, std::memory_order_relaxed);
  inflight_.count.store(a.count, std::memory_order_relaxed);
  inflight_.kind.store(static_cast<int>(a.kind), std::memory_order_relaxed);
  inflight_.dtype.store(static_cast<int>(a.dtype), std::memory_order_relaxed);
  inflight_.op.store(static_cast<int>(a.op), std::memory_order_relaxed);
  inflight_.root.store(a.root, std::memory_order_relaxed);
  inflight_.path.store(static_cast<int>(CallPath::kNone), std::memory_order_relaxed);
  inflight_.token.store(++calls_, std::memory_order_release);
  if (board_ && call_seq != 0) board_->Enter(call_seq);
}

bool Communicator::FirstUse(int bit) {
  const unsigned long long mask = 1ull << bit;
  if (announced_.load(std::memory_order_relaxed) & mask) return false;
  return (announced_.fetch_or(mask) & mask) == 0;
}

}  // namespace infiniccl
