#include "backend/mpi/p2p_batch.h"

#include <cstdio>
#include <mutex>

#include "backend/mpi/mpi_backend.h"
#include "core/dtype.h"
#include "mpi/large_count.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_tags.h"
#include "mpi/mpi_thread.h"
#include "mpi/mpi_types.h"

namespace infiniccl {

namespace {

// MPICH 4.0 reports a failed MPI_Wait (MPI_ERR_TRUNCATE, say) through the
// error handler of MPI_COMM_WORLD, fatal by default, rather than that of the
// request's communicator (MPI_ERRORS_RETURN on ours), as Open MPI does. So
// while any batch's requests are waited for, MPI_COMM_WORLD returns errors;
// its own handler is put back when the last of them is done. Batches wait on
// several threads at once (callers' and progress engines'): the first saves
// the handler, the last restores it, so none restores another's setting.
class WorldErrorsReturn {
 public:
  WorldErrorsReturn() {
#ifdef MPICH_VERSION
    std::lock_guard<std::mutex> users(Mutex());
    if (Users()++ > 0) return;
    mpi::SerialLock lock;
    MPI_Errhandler &saved = Saved();
    if (MPI_Comm_get_errhandler(MPI_COMM_WORLD, &saved) == MPI_SUCCESS) {
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    } else {
      saved = MPI_ERRHANDLER_NULL;
    }
#endif
  }
  ~WorldErrorsReturn() {
#ifdef MPICH_VERSION
    std::lock_guard<std::mutex> users(Mutex());
    if (--Users() > 0) return;
    MPI_Errhandler &saved = Saved();
    if (saved != MPI_ERRHANDLER_NULL) {
      mpi::SerialLock lock;
      MPI_Comm_set_errhandler(MPI_COMM_WORLD, saved);
      MPI_Errhandler_free(&saved);
      saved = MPI_ERRHANDLER_NULL;
    }
#endif
  }
  WorldErrorsReturn(const WorldErrorsReturn &) = delete;
  WorldErrorsReturn &operator=(const WorldErrorsReturn &) = delete;

 private:
  static std::mutex &Mutex() {
    static std::mutex *m = new std::mutex();  // lives through exit
    return *m;
  }
  static int &Users() {
    static int users = 0;
    return users;
  }
  static MPI_Errhandler &Saved() {
    static MPI_Errhandler saved = MPI_ERRHANDLER_NULL;
    return saved;
  }
};

}  // namespace

MpiP2pBatch::~MpiP2pBatch() {
  // Only reached with requests outstanding when a thread exits inside a
  // group (Complete always waits): release them rather than leak them.
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (finalized) return;
  mpi::SerialLock lock;
  for (const Op &op : ops_) {
    for (size_t i = op.first_req; i < op.end_req; ++i) {
      if (reqs_[i] == MPI_REQUEST_NULL) continue;
      if (op.kind == CollKind::kRecv) MPI_Cancel(&reqs_[i]);
      MPI_Request_free(&reqs_[i]);
    }
  }
}

Status MpiP2pBatch::Post(const CollArgs &a, const void *buf) {
  Op op{a.kind, a.root, a.tag, a.count, a.source, reqs_.size(), 0};
  const MPI_Datatype type = MpiTypeTable::Type(a.dtype);
  const size_t elem = DataTypeSize(a.dtype);
  if (a.kind == CollKind::kRecv && a.root == kAnySource && !mpi::OneMessage(a.count)) {
    return MakeStatus(infinicclNotSupported,
                      "a grouped receive from any source of %zu elements would be cut into "
                      "several messages",
                      a.count);
  }
  const int tag = MpiP2pTag(a.tag);
  const int rc =
      a.kind == CollKind::kSend
          ? mpi::Isend(buf, a.count, type, elem, a.root, tag, comm_, &reqs_)
          : mpi::Irecv(const_cast<void *>(buf), a.count, type, elem, MpiPeer(a.root), tag,
                       comm_, &reqs_);
  op.end_req = reqs_.size();
  // Requests already started (one chunk of several) are waited for at End.
  if (op.end_req > op.first_req) ops_.push_back(op);
  return MpiCheck(rc, a.kind == CollKind::kSend ? "MPI_Isend" : "MPI_Irecv");
}

Status MpiP2pBatch::Complete(const std::function<void(size_t)> &waiting,
                             std::vector<bool> *ok) {
  // Waited for one by one, so each failure is attributed to its operation.
  // One MPI_Waitall would do the same, but Open MPI 4.1 was seen to hang in
  // it when one request fails (MPI_ERR_TRUNCATE) with three or more ranks.
  Status first;
  ok->assign(ops_.size(), true);
  WorldErrorsReturn errors_return;
  for (size_t k = 0; k < ops_.size(); ++k) {
    const Op &op = ops_[k];
    waiting(k);
    for (size_t i = op.first_req; i < op.end_req; ++i) {
      // Polled when serialised (under the library's lock, never held across
      // the wait) or oversubscribed (mpi_thread.h). A Recv's sender is its
      // (first) request's, written before the batch completes.
      MPI_Status status;
      const bool report = op.source != nullptr && i == op.first_req;
      const int rc = mpi::WaitP2p(&reqs_[i], report ? &status : MPI_STATUS_IGNORE, comm_);
      if (rc == MPI_SUCCESS) {
        if (report) *op.source = status.MPI_SOURCE;
        continue;
      }
      (*ok)[k] = false;
      if (first.ok()) {
        char what[160];
        char tag[32] = "";
        if (op.tag != 0) std::snprintf(tag, sizeof tag, " (tag %d)", op.tag);
        char peer[24] = "any source";
        if (op.peer != kAnySource) std::snprintf(peer, sizeof peer, "peer %d", op.peer);
        std::snprintf(what, sizeof what, "completing %s of %zu elements%s %s %s",
                      CollKindName(op.kind), op.count, tag,
                      op.kind == CollKind::kSend ? "to" : "from", peer);
        first = MpiError(rc, what);
      }
      // A failed request is freed by MPI; make sure it is not touched again.
      reqs_[i] = MPI_REQUEST_NULL;
    }
  }
  if (!first.ok() && mpi::RevokedLocally(comm_)) return RevokedStatus(comm_, "a grouped Send/Recv");
  return first;
}

}  // namespace infiniccl
