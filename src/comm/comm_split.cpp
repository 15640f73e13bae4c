// infinicclCommSplit: a communicator split off its parent, under MPI or
// through the CCL's own split for one made without MPI.
#include <utility>

#include "backend/backend.h"
#include "comm/comm_attach.h"
#include "comm/comm_init.h"
#include "core/log.h"
#include "mpi/mpi_error.h"
#include "mpi/mpi_thread.h"

namespace infiniccl {

namespace {

// The CCL communicator of a split made under MPI; every rank of `parent`
// calls it after the MPI split, `child` null on ranks without a color. The
// CCL's own split (ncclCommSplit) where it has one and it succeeds on every
// rank; otherwise each child gets a CCL communicator of its own.
Status SplitCcl(Communicator &parent, int color, int key, Communicator *child) {
  Backend *ccl = parent.ccl_backend();
  if (ccl == nullptr) return Status::Ok();
  std::unique_ptr<Backend> backend;
  int rank = child ? child->rank() : 0, size = child ? child->size() : 0;
  const Status st = ccl->SplitNative(child ? color : -1, key, &rank, &size, &backend);
  int ok = st.ok() ? 1 : 0, all_ok = 0;
  INFINICCL_RETURN_IF_ERROR(MpiCheck(
      MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, parent.mpi_comm()), "MPI_Allreduce"));
  if (all_ok) {
    if (child != nullptr && backend != nullptr) {
      INFINICCL_INFO("%s communicator split natively: rank %d of %d", ccl->Name(),
                     child->rank(), child->size());
      child->set_ccl_backend(std::move(backend));
    }
    return Status::Ok();
  }
  backend.reset();
  if (!st.ok() && st.code() != infinicclNotSupported) {
    INFINICCL_WARN("%s; the new communicator gets a CCL communicator of its own",
                   st.message().c_str());
  }
  // Every rank of the child left without a CCL alike: SplitComm gives it
  // one of its own (AttachChild).
  return Status::Ok();
}

// Splitting a communicator made without MPI (infinicclCommInitRank): only
// its CCL can, and the child's place comes from the CCL.
Status SplitWithoutMpi(Communicator &parent, int color, int key,
                       std::unique_ptr<Communicator> *out) {
  Backend *ccl = parent.ccl_backend();
  if (ccl == nullptr) {
    return Status(infinicclInternalError, "communicator with neither MPI nor a CCL");
  }
  int rank = -1, size = 0;
  std::unique_ptr<Backend> backend;
  Status st = ccl->SplitNative(color, key, &rank, &size, &backend);
  if (!st.ok()) {
    return Status(st.code(),
                  "splitting a communicator made without MPI (infinicclCommInitRank) "
                  "takes the CCL's own split: " +
                      st.message());
  }
  if (backend == nullptr) return Status::Ok();  // no color: no communicator
  std::unique_ptr<Communicator> c = CommFactory::New();
  CommFactory::SetPlace(*c, rank, size);
  c->set_binding(parent.binding());
  c->set_ccl_backend(std::move(backend));
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

namespace {

Status SplitUnderMpi(Communicator &parent, int color, int key,
                     std::unique_ptr<Communicator> *out) {
  INFINICCL_RETURN_IF_ERROR(parent.CheckDrained("MPI_Comm_split"));
  std::unique_ptr<Communicator> c = CommFactory::New();
  {
    mpi::SerialLock lock;
    INFINICCL_RETURN_IF_ERROR(MpiCheck(MPI_Comm_split(parent.mpi_comm(),
                                                      color < 0 ? MPI_UNDEFINED : color,
                                                      key, &CommFactory::mpi_comm(*c)),
                                       "MPI_Comm_split"));
  }
  if (CommFactory::mpi_comm(*c) == MPI_COMM_NULL) {
    c.reset();  // no color: no communicator, but the CCL split below is collective
  } else {
    INFINICCL_RETURN_IF_ERROR(CommFactory::FinishUnderMpi(*c));
    // Same process, same device: the binding is copied, not redone (SetDevice
    // already ran for the parent). The staging pool is process-wide, so the
    // child shares it as it is.
    c->set_binding(parent.binding());
    PageLockShm(*c);
  }
  // Every rank of the parent takes part (the CCL's split is collective over
  // it), those without a color included; the parent's ranks agreed at
  // creation on having a CCL, so all take this together.
  INFINICCL_RETURN_IF_ERROR(SplitCcl(parent, color, key, c.get()));
  if (c != nullptr) {
    // The child's own groups (the parent's need not hold in it); its ranks
    // all have the CCL split from the parent's or all have none.
    INFINICCL_RETURN_IF_ERROR(AttachGroups(*c));
  }
  *out = std::move(c);
  return Status::Ok();
}

}  // namespace

Status SplitComm(Communicator &parent, int color, int key,
                 std::unique_ptr<Communicator> *out) {
  if (!parent.has_mpi()) return SplitWithoutMpi(parent, color, key, out);
  Communicator::CommCallGuard watched(parent, CommCall::kSplit);
  const Status st = SplitUnderMpi(parent, color, key, out);
  watched.Returned(st);
  return st;
}

}  // namespace infiniccl
